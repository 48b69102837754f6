// Tests for Workers.
