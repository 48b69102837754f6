// Tests for PostgresClient.
