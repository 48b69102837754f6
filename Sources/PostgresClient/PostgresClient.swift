// Module PostgresClient.
