// APNs Sandbox — which configuration file the tools (token, client-cert, push) read.
import Foundation

/// The configuration file of the command-line tools: the one given (`--config`), else `APNS_SANDBOX_CONFIG`,
/// else `config/sandbox.json` when it exists, else none.
enum ConfigurationFile {
    static func path(_ given: String?) -> String? {
        given ?? ProcessInfo.processInfo.environment["APNS_SANDBOX_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (FileManager.default.fileExists(atPath: "config/sandbox.json") ? "config/sandbox.json" : nil)
    }
}
