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

        // Clients for the two outside systems.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        .target(name: "CurlHTTP", dependencies: ["CCurl"]),

        // Apple's verifyReceipt: the wire model (shared with the fake), and the client that decides what an answer means.
        .target(name: "AppStoreModel"),
        .target(
            name: "AppStoreClient",
            dependencies: ["AppStoreModel", "CurlHTTP", "ReceiptRules", .product(name: "Logging", package: "swift-log")]
        ),

        // The verdict rules: pure, no I/O.
        .target(name: "ReceiptRules"),

        // The job table, the ledger and migrations.
        .target(
            name: "ReceiptQueue",
            dependencies: ["PostgresClient", "ReceiptRules", .product(name: "Logging", package: "swift-log")]
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

        // A temporary PostgreSQL cluster for the demo, the benchmark and the tests.
        .target(name: "LocalPostgres", dependencies: ["PostgresClient"]),

        // The `receipt-worker` executable: argument parsing and wiring only.
        .executableTarget(
            name: "ReceiptWorkerCommand",
            dependencies: [
                "Workers", "FakeAppStore", "LocalPostgres", "ReceiptQueue", "AppStoreClient", "CurlHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .testTarget(name: "ReceiptRulesTests", dependencies: ["ReceiptRules"]),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient", "LocalPostgres"]),
        .testTarget(name: "CurlHTTPTests", dependencies: ["CurlHTTP"]),
        .testTarget(name: "AppStoreClientTests", dependencies: ["AppStoreClient", "AppStoreModel", "ReceiptRules"]),
        .testTarget(name: "WorkersTests", dependencies: ["Workers", "ReceiptQueue", "AppStoreClient", "ReceiptRules"]),
        .testTarget(name: "FakeAppStoreTests", dependencies: ["FakeAppStore", "AppStoreModel"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Workers", "ReceiptQueue", "PostgresClient", "LocalPostgres", "FakeAppStore", "AppStoreClient",
                "AppStoreModel", "CurlHTTP", "ReceiptRules",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
