import PostgresClient

/// The benchmark's own connections, named `receipt-bench` in pg_stat_activity so the worker's can be counted apart.
enum BenchConnection {
    static let applicationName = "receipt-bench"

    static func open(_ url: String) throws -> PostgresConnection {
        let connection = try PostgresConnection(url)
        try connection.execute("SET application_name = '\(applicationName)'")
        return connection
    }
}
