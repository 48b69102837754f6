// Tests for IntegrationTests.
