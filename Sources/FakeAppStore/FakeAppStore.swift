// Module FakeAppStore.
