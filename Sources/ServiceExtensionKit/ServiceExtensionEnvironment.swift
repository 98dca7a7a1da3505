// APNs Sandbox — ServiceExtensionKit: what the sandbox tells an extension besides the request.

import Foundation
import Synchronization

/// The device-side facts an iOS extension gets from the system: its app-group container, the app's keychain keys
/// and the device locale (docs/extension-protocol.md, the `request` message and the process environment).
///
/// Read it with ``current`` inside `didReceive`. The host sets it from the `request` line before it creates the
/// extension; outside the host (unit tests) it is built from the process environment
/// (`APNS_SANDBOX_APP_GROUP`, `APNS_SANDBOX_INSTANCE`, `LANG`).
public struct ServiceExtensionEnvironment: Sendable {
    /// The app's bundle identifier (`bundleId`).
    public var bundleIdentifier: String?
    /// The push's `apns-id`.
    public var apnsID: String?
    /// The app-group container: one directory per app per device, kept between notifications. `nil` if the
    /// sandbox gave none.
    public var appGroupURL: URL?
    /// The device keychain's keys for this app, by name (`keys` in the request; base64-decoded).
    public var keys: [String: Data]
    /// The device locale (`locale` in the request, such as `en_US`).
    public var locale: Locale
    /// The sandbox's id for this extension instance (`APNS_SANDBOX_INSTANCE`).
    public var instanceID: String?
    /// The instance's working directory; `FileManager.default.temporaryDirectory` points here too.
    public var workingDirectoryURL: URL

    public init(
        bundleIdentifier: String? = nil, apnsID: String? = nil, appGroupURL: URL? = nil, keys: [String: Data] = [:],
        locale: Locale = Locale(identifier: "en_US"), instanceID: String? = nil,
        workingDirectoryURL: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.apnsID = apnsID
        self.appGroupURL = appGroupURL
        self.keys = keys
        self.locale = locale
        self.instanceID = instanceID
        self.workingDirectoryURL = workingDirectoryURL
    }

    /// The app's own key: the one named after ``bundleIdentifier``, or the only key there is.
    public var appKey: Data? {
        if let bundleIdentifier, let key = keys[bundleIdentifier] { return key }
        return keys.count == 1 ? keys.first?.value : nil
    }

    /// The environment of the running extension.
    public static var current: ServiceExtensionEnvironment {
        get { installed.withLock { $0 } ?? fromProcessEnvironment() }
        set { installed.withLock { $0 = newValue } }
    }

    private static let installed = Mutex<ServiceExtensionEnvironment?>(nil)

    /// What the process environment says (no keys: those come only with the request).
    static func fromProcessEnvironment() -> ServiceExtensionEnvironment {
        let variables = ProcessInfo.processInfo.environment
        let language = variables["LANG"].map { String($0.prefix { $0 != "." }) }
        return ServiceExtensionEnvironment(
            appGroupURL: variables["APNS_SANDBOX_APP_GROUP"].map { URL(fileURLWithPath: $0, isDirectory: true) },
            locale: Locale(identifier: language.flatMap { $0.isEmpty || $0 == "C" ? nil : $0 } ?? "en_US"),
            instanceID: variables["APNS_SANDBOX_INSTANCE"])
    }
}

extension FileManager {
    /// The app-group container, as `containerURL(forSecurityApplicationGroupIdentifier:)` returns it on iOS.
    ///
    /// The sandbox gives each app one app group per device, so every group identifier maps to
    /// ``ServiceExtensionEnvironment/appGroupURL``.
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
        ServiceExtensionEnvironment.current.appGroupURL
    }
}
