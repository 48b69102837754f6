// Module LocalPostgres.
