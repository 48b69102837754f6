// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "receipt-worker",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "receipt-worker", targets: ["ReceiptWorkerCommand"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        // System libraries.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]
        ),

        // SIGTERM/SIGINT through a self-pipe (the handler must be C: it may only call async-signal-safe functions).
        .target(name: "CSignals"),

        // Clients for the two outside systems.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        .target(name: "CurlHTTP", dependencies: ["CCurl"]),

        // Apple's verifyReceipt: the wire model (shared with the fake), and the client that decides what an answer means.
        // A small JSON writer shared by the hot paths.
        .target(name: "JSONText"),
        .target(name: "AppStoreModel", dependencies: ["JSONText"]),
        .target(
            name: "AppStoreClient",
            dependencies: ["AppStoreModel", "CurlHTTP", "ReceiptRules", .product(name: "Logging", package: "swift-log")]
        ),

        // The verdict rules: pure, no I/O.
        .target(name: "ReceiptRules"),

        // The job table, the ledger and migrations.
        .target(
            name: "ReceiptQueue",
            dependencies: ["PostgresClient", "ReceiptRules", "JSONText", .product(name: "Logging", package: "swift-log")]
        ),

        // Workers and the scheduler: wire the queue, the App Store client and the rules together.
        .target(
            name: "Workers",
            dependencies: [
                "ReceiptQueue", "AppStoreClient", "ReceiptRules", "PostgresClient",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // A local stand-in for Apple's verifyReceipt.
        .target(
            name: "FakeAppStore",
            dependencies: [
                "AppStoreModel",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Metrics (Prometheus text format) and health endpoints.
        .target(
            name: "Observability",
            dependencies: [
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // `receipt-worker bench`: the throughput and latency benchmark.
        .target(
            name: "Bench",
            dependencies: [
                "Workers", "FakeAppStore", "LocalPostgres", "ReceiptQueue", "AppStoreClient", "AppStoreModel",
                "CurlHTTP", "PostgresClient", "ReceiptRules",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // A temporary PostgreSQL cluster for the demo, the benchmark and the tests.
        .target(name: "LocalPostgres", dependencies: ["PostgresClient"]),

        // The `receipt-worker` executable: argument parsing and wiring only.
        .executableTarget(
            name: "ReceiptWorkerCommand",
            dependencies: [
                "Workers", "FakeAppStore", "LocalPostgres", "ReceiptQueue", "AppStoreClient", "CurlHTTP",
                "Observability", "Bench", "CSignals",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Locates the real Apple data in ../shared/fixtures/apple for the test targets.
        .target(name: "AppleFixtureFiles", path: "Tests/AppleFixtureFiles"),
        .testTarget(name: "ReceiptRulesTests", dependencies: ["ReceiptRules", "AppleFixtureFiles"]),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient", "LocalPostgres"]),
        .testTarget(name: "CurlHTTPTests", dependencies: ["CurlHTTP"]),
        .testTarget(
            name: "AppStoreClientTests", dependencies: ["AppStoreClient", "AppStoreModel", "ReceiptRules", "AppleFixtureFiles"]
        ),
        .testTarget(
            name: "WorkersTests",
            dependencies: ["Workers", "ReceiptQueue", "AppStoreClient", "ReceiptRules", "AppleFixtureFiles"]
        ),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability", "CurlHTTP"]),
        .testTarget(name: "FakeAppStoreTests", dependencies: ["FakeAppStore", "AppStoreModel", "AppleFixtureFiles"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Workers", "ReceiptQueue", "PostgresClient", "LocalPostgres", "FakeAppStore", "AppStoreClient",
                "AppStoreModel", "CurlHTTP", "ReceiptRules", "AppleFixtureFiles",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
