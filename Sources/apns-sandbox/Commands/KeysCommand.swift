// APNs Sandbox — `keys create`: a new ES256 signing key for a team, as Apple's developer portal gives one.
import Crypto
import Foundation

extension CommandRegistry {
    static let keys: [Command] = [
        Command(
            name: "keys create",
            summary: """
                Creates an ES256 key for a team (offline): writes AuthKey_<KEYID>.p8, prints the Key ID and the
                lines that add it to the configuration's "teams".
                """,
            options: [
                Option("--team", "TEAM", "the team id (required)"),
                Option("--key-id", "ID", "the Key ID (default: 10 random letters and digits)"),
                Option("--out", "DIR", "where the .p8 goes (default: keys)"),
                Option("--json", nil, "print keyId, teamId, file and the configuration entry as JSON"),
            ],
            usesServer: false,
            run: runKeysCreate),
    ]

    static func runKeysCreate(_ arguments: ParsedArguments) throws -> Int32 {
        guard let team = arguments.value("--team") else { throw UsageError("--team is required") }
        let keyID = arguments.value("--key-id") ?? randomKeyID()
        for (flag, value) in [("--team", team), ("--key-id", keyID)] {
            guard !value.isEmpty, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw UsageError("\(flag) must be letters and digits, not \(value)")
            }
        }
        let directory = arguments.value("--out") ?? "keys"
        let file = directory + "/AuthKey_\(keyID).p8"
        guard !FileManager.default.fileExists(atPath: file) else { throw UsageError("\(file) exists") }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let pem = try ES256PrivateKey.generate().pkcs8PEM
            guard FileManager.default.createFile(atPath: file, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw UsageError("cannot write \(file)")
            }
        } catch let error as UsageError {
            throw error
        } catch {
            throw UsageError("cannot write \(file): \(error)")
        }
        let entry: [String: Any] = ["teamID": team, "keys": [["keyID": keyID, "privateKeyFile": file]]]
        if arguments.json {
            try Output.json(["keyId": keyID, "teamId": team, "file": file, "configuration": entry])
            return 0
        }
        let line = try JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys, .withoutEscapingSlashes])
        print("Key ID: \(keyID)")
        print("Team ID: \(team)")
        print("Private key: \(file)")
        print("Configuration (add to \"teams\", or its key to the team's \"keys\"):")
        print("  " + String(decoding: line, as: UTF8.self))
        return 0
    }

    /// 10 upper-case letters and digits, like Apple's Key IDs.
    static func randomKeyID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<10).map { _ in alphabet.randomElement() ?? "A" })
    }
}
