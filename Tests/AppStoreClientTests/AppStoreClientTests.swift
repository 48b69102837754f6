// Tests for AppStoreClientTests.
