// swift-tools-version:6.0
// APNs Sandbox: a stand-in for Apple's Push Notification service and the iPhones behind it.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "apns-sandbox",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "apns-sandbox", targets: ["apns-sandbox"]),
        .library(name: "ServiceExtensionKit", targets: ["ServiceExtensionKit"]),
    ],
    targets: [
        // System libraries through pkg-config (Debian providers in brackets).
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite3", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Process capabilities (libcap): CAP_NET_BIND_SERVICE raised for binding ports below 1024.
        .systemLibrary(name: "CCap", pkgConfig: "libcap", providers: [.apt(["libcap-dev"])]),
        // Linux syscalls that Glibc's Swift module hides (epoll, eventfd, timerfd, accept4).
        .target(name: "CLinuxSystem", cSettings: [.define("_GNU_SOURCE")]),
        // Starting exec extensions with PR_SET_PDEATHSIG, and the guardian that kills their groups when the server dies.
        .target(name: "CProcess", cSettings: [.define("_GNU_SOURCE")]),
        // C macros and library-version differences as real functions.
        .target(name: "CLibShims", dependencies: ["COpenSSL", "CZlib", "CSQLite3", "CNGHTTP2"]),

        // Small leaf helpers every module may use (thread names and niceness, signals, base64url, logging).
        .target(name: "Support", dependencies: ["CLinuxSystem"], swiftSettings: strict),
        .target(name: "APNsProtocol", dependencies: ["Support"], swiftSettings: strict),
        .target(name: "Sandbox", dependencies: ["APNsProtocol", "Support"], swiftSettings: strict),
        .target(name: "Transport", dependencies: ["Support", "CLinuxSystem", "COpenSSL", "CLibShims", "CCap"], swiftSettings: strict),
        .target(name: "HTTP", dependencies: ["Support", "Transport", "CNGHTTP2", "CZlib", "CLibShims"], swiftSettings: strict),
        .target(name: "Crypto", dependencies: ["Support", "COpenSSL", "CLibShims"], swiftSettings: strict),
        // The metrics registry (counters, gauges, histograms) and Prometheus' text format; no project module.
        .target(name: "Metrics", dependencies: ["Support"], swiftSettings: strict),
        // The event hub (SSE fan-out), the recorder of events that come from no notification, the webhook outbox's models.
        .target(name: "Events", dependencies: ["Sandbox", "APNsProtocol", "Support"], swiftSettings: strict),
        // The push intake: APNs' checks on one push as stages, ending in a destination (no HTTP).
        .target(name: "Intake", dependencies: ["APNsProtocol", "Sandbox", "Support"], swiftSettings: strict),
        .target(name: "Store", dependencies: ["Sandbox", "Events", "APNsProtocol", "CSQLite3", "CLibShims", "Support"], swiftSettings: strict),
        // The one outbound HTTP client (libcurl's multi interface on a thread of its own): webhooks, downloads.
        .target(name: "HTTPClient", dependencies: ["CCurl", "Support"], swiftSettings: strict),
        .target(name: "ExtensionRuntime", dependencies: ["Sandbox", "APNsProtocol", "Crypto", "Support", "CProcess", "HTTPClient"], swiftSettings: strict),
        .target(name: "Webhooks", dependencies: ["Sandbox", "Events", "APNsProtocol", "Crypto", "Support", "HTTPClient"], swiftSettings: strict),
        // The web dashboard's HTML, CSS and JavaScript, built into the binary (no build step of their own).
        .target(name: "Dashboard", resources: [.embedInCode("Assets")], swiftSettings: strict),
        .target(
            name: "Server",
            dependencies: ["Support", "Transport", "HTTP", "Crypto", "APNsProtocol", "Sandbox", "Intake", "Events", "Store", "ExtensionRuntime", "Webhooks", "HTTPClient", "Dashboard", "Metrics"],
            swiftSettings: strict),
        .executableTarget(name: "apns-sandbox", dependencies: ["Server", "Support", "APNsProtocol", "Crypto", "HTTPClient", "Transport"], swiftSettings: strict),
        // Apple's UNNotificationServiceExtension shape for `exec` extensions; Foundation only, no other target here.
        .target(name: "ServiceExtensionKit", swiftSettings: strict),
        .executableTarget(
            name: "ExampleNotificationService", dependencies: ["ServiceExtensionKit", "COpenSSL"],
            path: "Examples/NotificationService", swiftSettings: strict),

        // The fuzz targets (scripts/fuzz builds them with libFuzzer; a plain build replays inputs).
        .executableTarget(
            name: "apns-sandbox-fuzz", dependencies: ["APNsProtocol", "HTTP", "Crypto", "ExtensionRuntime", "Server", "Transport", "Support", "CNGHTTP2"], path: "Fuzz/Sources",
            swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])]),

        // posix_spawn for the tests' child processes (Foundation's Process.run crashes on 6.3.1 Linux).
        .target(name: "TestProcessSupport", dependencies: ["Support"], path: "Tests/TestProcessSupport", swiftSettings: strict),
        .testTarget(name: "SupportTests", dependencies: ["Support"], swiftSettings: strict),
        .testTarget(name: "MetricsTests", dependencies: ["Metrics"], swiftSettings: strict),
        .testTarget(name: "APNsProtocolTests", dependencies: ["APNsProtocol", "Sandbox", "Support"], swiftSettings: strict),
        .testTarget(name: "SandboxTests", dependencies: ["Sandbox", "APNsProtocol", "Support"], swiftSettings: strict),
        .testTarget(name: "IntakeTests", dependencies: ["Intake", "Sandbox", "APNsProtocol", "Support"], swiftSettings: strict),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "Support"], swiftSettings: strict),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "Support", "Transport", "CNGHTTP2", "TestProcessSupport"], swiftSettings: strict),
        .testTarget(
            name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTP", "Transport", "Crypto", "Support", "TestProcessSupport"],
            swiftSettings: strict),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "Support", "TestProcessSupport"], swiftSettings: strict),
        .testTarget(name: "StoreTests", dependencies: ["Store", "Sandbox", "Events", "APNsProtocol", "Support", "TestProcessSupport"], swiftSettings: strict),
        .testTarget(name: "ExtensionRuntimeTests", dependencies: ["ExtensionRuntime", "Sandbox", "APNsProtocol", "Crypto", "Support", "TestProcessSupport"], swiftSettings: strict),
        .testTarget(name: "WebhooksTests", dependencies: ["Webhooks", "Sandbox", "Events", "Crypto", "Support", "TestProcessSupport"], swiftSettings: strict),
        .testTarget(
            name: "ServerTests",
            dependencies: ["Server", "Dashboard", "HTTP", "Crypto", "Support", "APNsProtocol", "Sandbox", "Intake", "Events", "Store", "ExtensionRuntime", "Webhooks", "TestProcessSupport"],
            swiftSettings: strict),
        .testTarget(name: "ServiceExtensionKitTests", dependencies: ["ServiceExtensionKit", "TestProcessSupport"], swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
