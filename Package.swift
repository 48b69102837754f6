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
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
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

        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),

        // SIGTERM/SIGINT through a self-pipe (the handler must be C: it may only call async-signal-safe functions).
        .target(name: "CSignals"),

        // The Linux system calls Swift's Glibc module leaves out: epoll, and naming a thread.
        .target(name: "CLinux"),

        // Threads of their own for blocking loops, the lock they hand results over with, and durations in seconds.
        .target(name: "ThreadSupport", dependencies: ["CLinux"]),

        // Clients for the two outside systems.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        // libcurl's per-transfer upload buffers from a pool of page-aligned slots rather than glibc's heap.
        .target(name: "CCurlMemory", dependencies: ["CCurl"]),
        .target(name: "CurlHTTP", dependencies: ["CCurl", "CCurlMemory", "CLinux", "ThreadSupport"]),

        // Apple's verifyReceipt: the wire model (shared with the fake), and the client that decides what an answer means.
        // A small JSON writer shared by the hot paths.
        .target(name: "JSONText"),
        .target(name: "AppStoreModel", dependencies: ["JSONText"]),
        // The App Store Server API client signs its JWTs with swift-crypto and shares base64url with the JWS code.
        .target(
            name: "AppStoreClient",
            dependencies: [
                "AppStoreModel", "AppStoreSignedData", "CurlHTTP", "ReceiptRules", "ThreadSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Apple's Summary Sales Reports (Sales and Trends): the gzip-compressed, tab-separated file read by column name,
        // and the App Store Connect API client that downloads it (its own key, JWT made as the Server API's).
        .target(
            name: "SalesReports",
            dependencies: [
                "AppStoreModel", "AppStoreClient", "ConsoleOutput", "CurlHTTP", "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),

        // StoreKit 2 signed data (JWS): the certificate chain to Apple's root, the ES256 signature, the payloads.
        .target(
            name: "AppStoreSignedData",
            dependencies: [
                "AppStoreModel",
                "AppReceipt",
                "ThreadSupport",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
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
                "ReceiptQueue", "AppStoreClient", "AppStoreSignedData", "AppReceipt", "ReceiptRules", "PostgresClient",
                "ThreadSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // An app receipt's PKCS#7 payload decoded (untrusted: the signature is not checked), for the fake App Store and
        // for reading a transaction id out of a receipt before asking the App Store Server API.
        .target(
            name: "AppReceipt",
            dependencies: ["AppStoreModel", .product(name: "SwiftASN1", package: "swift-asn1")]
        ),

        // A local stand-in for Apple's verifyReceipt, App Store Server API and server notifications (base64url shared
        // with the JWS code; notifications sent with the libcurl client).
        .target(
            name: "FakeAppStore",
            dependencies: [
                "AppStoreModel", "AppReceipt", "AppStoreSignedData", "CurlHTTP", "ThreadSupport", "CZlib",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Metrics (Prometheus text format), health endpoints, and the operations port of `work`.
        .target(
            name: "Observability",
            dependencies: [
                "ThreadSupport", "Workers", "ReceiptQueue", "PostgresClient", "AppStoreClient", "HTTPServing",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // A plain HTTP/1.1 server on SwiftNIO: the operations port and the notification receiver.
        .target(
            name: "HTTPServing",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `receipt-worker notifications`: App Store Server Notifications V2 taken in over HTTP and stored for the workers.
        .target(
            name: "NotificationReceiver",
            dependencies: [
                "ReceiptQueue", "PostgresClient", "HTTPServing",
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
                "AppStoreSignedData", "CurlHTTP", "PostgresClient", "ReceiptRules", "ThreadSupport", "NotificationReceiver",
                "JSONText",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // `receipt-worker demo`: the whole pipeline on sample orders, end to end.
        .target(
            name: "Demo",
            dependencies: [
                "Workers", "FakeAppStore", "LocalPostgres", "ReceiptQueue", "AppStoreClient", "AppStoreModel",
                "AppStoreSignedData", "CurlHTTP", "PostgresClient", "ReceiptRules", "ThreadSupport", "ConsoleOutput",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Plain text for terminals: aligned tables, flushing standard output.
        .target(name: "ConsoleOutput"),

        // Support's tools: `receipt-worker explain` (one order's, customer's or transaction's whole story, read-only)
        // and the local half of `set-account-token` (the token registered, the purchase claimed).
        .target(name: "CustomerSupport", dependencies: ["PostgresClient", "ReceiptQueue", "ConsoleOutput", "JSONText"]),

        // A temporary PostgreSQL cluster for the demo, the benchmark and the tests.
        .target(name: "LocalPostgres", dependencies: ["PostgresClient"]),

        // The `receipt-worker` executable: argument parsing and wiring only.
        .executableTarget(
            name: "ReceiptWorkerCommand",
            dependencies: [
                "Workers", "FakeAppStore", "LocalPostgres", "ReceiptQueue", "AppStoreClient", "CurlHTTP",
                "Observability", "NotificationReceiver", "Bench", "Demo", "ConsoleOutput", "CSignals", "ThreadSupport",
                "AppStoreSignedData", "SalesReports", "JSONText", "CustomerSupport", "AppStoreModel",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Locates the real Apple data in ../shared/fixtures/apple for the test targets.
        .target(name: "AppleFixtureFiles", path: "Tests/AppleFixtureFiles"),
        // A raw HTTP/1.1 client on a loopback socket, for the tests of the servers (fake App Store, metrics port).
        .target(name: "LoopbackHTTP", path: "Tests/LoopbackHTTP"),
        // Only tests marked .needsAppleFixtures read the real Apple data (issue 39).
        .testTarget(name: "AppleFixtureFilesTests", dependencies: ["AppleFixtureFiles"]),
        .testTarget(name: "ReceiptRulesTests", dependencies: ["ReceiptRules", "AppleFixtureFiles"]),
        .testTarget(name: "AppStoreModelTests", dependencies: ["AppStoreModel", "AppleFixtureFiles"]),
        .testTarget(name: "JSONTextTests", dependencies: ["JSONText"]),
        .testTarget(name: "ConsoleOutputTests", dependencies: ["ConsoleOutput"]),
        .testTarget(name: "PostgresClientTests", dependencies: ["PostgresClient", "LocalPostgres"]),
        .testTarget(name: "ThreadSupportTests", dependencies: ["ThreadSupport"]),
        .testTarget(name: "AppReceiptTests", dependencies: ["AppReceipt", "AppStoreModel", "AppleFixtureFiles"]),
        .testTarget(
            name: "CurlHTTPTests", dependencies: ["CurlHTTP", "CCurl", "CCurlMemory", "ThreadSupport", "LoopbackHTTP"]
        ),
        .testTarget(
            name: "AppStoreSignedDataTests",
            dependencies: [
                "AppStoreSignedData", "AppleFixtureFiles", "FakeAppStore", "AppStoreClient", "CurlHTTP", "LoopbackHTTP",
                "AppReceipt",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(
            name: "AppStoreClientTests",
            dependencies: [
                "AppStoreClient", "AppStoreModel", "AppStoreSignedData", "CurlHTTP", "FakeAppStore", "ReceiptRules",
                "AppleFixtureFiles", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "SalesReportsTests",
            dependencies: [
                "SalesReports", "AppStoreModel", "AppStoreClient", "FakeAppStore", "CurlHTTP", "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "WorkersTests",
            dependencies: ["Workers", "ReceiptQueue", "AppStoreClient", "ReceiptRules", "AppleFixtureFiles"]
        ),
        .testTarget(name: "NotificationReceiverTests", dependencies: ["NotificationReceiver"]),
        .testTarget(name: "BenchTests", dependencies: ["Bench"]),
        .testTarget(
            name: "HTTPServingTests",
            dependencies: [
                "HTTPServing", "LoopbackHTTP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability", "CurlHTTP", "LoopbackHTTP", "HTTPServing"]),
        // The docs name every setting the sources read and every SQL object (parsed from the repository's files).
        .testTarget(name: "DocsTests", dependencies: ["ReceiptRules"]),
        .testTarget(
            name: "FakeAppStoreTests",
            dependencies: [
                "FakeAppStore", "AppStoreModel", "AppStoreSignedData", "AppleFixtureFiles", "LoopbackHTTP", "CurlHTTP",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Every decoder of outside input fed 100,000 mutated inputs or more (issue 22): none may trap.
        .testTarget(
            name: "FuzzTests",
            dependencies: [
                "AppReceipt", "AppStoreModel", "AppStoreClient", "AppStoreSignedData", "FakeAppStore", "AppleFixtureFiles",
                "SalesReports", "CurlHTTP", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"), .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Workers", "ReceiptQueue", "PostgresClient", "LocalPostgres", "FakeAppStore", "AppStoreClient",
                "AppStoreModel", "CurlHTTP", "ReceiptRules", "AppleFixtureFiles", "ThreadSupport", "LoopbackHTTP",
                "AppStoreSignedData", "AppReceipt", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// In CI (`CI=true`) a warning in the project's own code fails the build: its Swift and C targets and the tests, not
// the dependencies (their settings are their own). Elsewhere warnings stay warnings, so that a newer toolchain's new
// warnings never stop someone from building a clone.
if Context.environment["CI"]?.lowercased() == "true" {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-warnings-as-errors"])]
        target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-Werror"])]
    }
}
