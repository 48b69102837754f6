// Module AppStoreClient.
