// The benchmark.
