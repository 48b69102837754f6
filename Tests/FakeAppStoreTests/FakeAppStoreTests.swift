// Tests for FakeAppStoreTests.
