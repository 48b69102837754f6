-- Requeue every dead job (after an outage or a configuration fix). Returns how many were requeued; jobs whose
-- order already has another open job, and jobs whose input retention has cleared, are left dead.
CREATE OR REPLACE FUNCTION receipt_requeue_dead(p_note text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    v_id bigint;
    v_count integer := 0;
BEGIN
    FOR v_id IN SELECT j.id FROM receipt_jobs j WHERE j.state = 'dead' ORDER BY j.id
    LOOP
        BEGIN
            PERFORM receipt_requeue(v_id, p_note);
            v_count := v_count + 1;
        EXCEPTION WHEN unique_violation OR invalid_parameter_value THEN
            NULL;
        END;
    END LOOP;
    RETURN v_count;
END $$;
