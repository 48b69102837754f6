// Metrics and health endpoints.
