import PostgresClient

extension BenchEnvironment {
    /// The database of a notifications run: started (or created) and migrated, with `appAppleId` registered for the
    /// bench app (production notifications must carry it). Returns an admin connection to it; close it when done.
    func startNotificationDatabase(_ configuration: BenchConfiguration, appAppleId: Int64) throws -> PostgresConnection {
        try startDatabase(
            configuration.database, fsync: configuration.fsync, sqlDirectory: configuration.sqlDirectory,
            settings: configuration.postgresSettings
        )
        let admin = try BenchConnection.open(databaseURL)
        do {
            _ = try admin.query(
                "UPDATE receipt_apps SET app_apple_id = $1 WHERE bundle_id = $2",
                [String(appAppleId), Self.bundleId]
            )
        } catch {
            admin.close()
            throw error
        }
        return admin
    }
}
