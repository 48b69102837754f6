// Module Workers.
