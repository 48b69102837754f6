// Tests for Observability.
