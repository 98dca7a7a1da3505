// APNs Sandbox — fuzz targets (libFuzzer): one executable, the target named by `APNS_SANDBOX_FUZZ_TARGET`.
//
// Built by `scripts/fuzz` with `-sanitize=fuzzer -D FUZZING`: libFuzzer's `main` drives `LLVMFuzzerTestOneInput`.
// Built plainly (`swift build`, as every target is), it replays files instead: `apns-sandbox-fuzz TARGET FILE...`
// runs each input once and exits 0 unless one crashes — how a crash file from a fuzz run is re-run under a debugger.
import APNsProtocol
import Crypto
import ExtensionRuntime
import Foundation
import Glibc
import HTTP
import Server

/// The targets: each takes any bytes and must neither crash nor hang on them.
enum FuzzTargets {
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        "config": config,
        "extension-output": extensionOutput,
        "http1": http1,
        "http2": HTTP2Fuzz.run,
        "json": json,
        "provider-token": providerToken,
        "push": push,
    ]

    /// The configuration file's decoder and its checks; a configuration it accepts, encoded, decodes the same.
    static func config(_ input: [UInt8]) {
        guard let decoded = try? SandboxConfiguration.decode(input, source: "fuzz") else { return }
        _ = try? decoded.validate()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let encoded = try? encoder.encode(decoded) else {
            preconditionFailure("config: a decoded configuration does not encode")
        }
        let again = try? SandboxConfiguration.decode(Array(encoded), source: "fuzz")
        precondition(again == decoded, "config: an encoded configuration decodes differently")
    }

    /// What an exec extension writes (its standard output in up to three chunks, the first two bytes say where they
    /// split, read into lines and messages) and what a webhook extension answers (the whole input as a 200 body).
    /// Splitting must not change the lines; content read back from its own JSON must be the same content.
    static func extensionOutput(_ input: [UInt8]) {
        let first = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
        let second = input.count < 2 ? first : max(first, Int(input[1]) * 4 % (input.count + 1))
        var whole = ExtensionOutputLines()
        let unsplit = whole.append(input, eof: true, maxLineBytes: .max).lines
        var chunked = ExtensionOutputLines()
        var bounded = ExtensionOutputLines()
        var lines: [[UInt8]] = []
        for (index, part) in [input[..<first], input[first..<second], input[second...]].enumerated() {
            lines += chunked.append(Array(part), eof: index == 2, maxLineBytes: .max).lines
            _ = bounded.append(Array(part), eof: index == 2, maxLineBytes: 64)
        }
        precondition(lines == unsplit, "extension-output: lines depend on how the output was split")
        for line in lines {
            guard case .content(let content) = ExtensionMessage.execLine(line) else { continue }
            let message = JSON.object([("type", .string("content")), ("content", content.json)])
            precondition(ExtensionMessage.execLine(message.serializedBytes) == .content(content),
                         "extension-output: content written back reads differently")
        }
        if case .success(let content) = ExtensionMessage.webhookBody(input) {
            precondition(ExtensionMessage.webhookBody(content.json.serializedBytes) == .success(content),
                         "extension-output: a webhook's content written back reads differently")
        }
    }

    /// The HTTP/1.1 request parser, fed the input in two parts (the first byte says where it splits), reading
    /// every event until it wants more data or fails.
    static func http1(_ input: [UInt8]) {
        var parser = HTTP1Parser(limits: HTTP1Limits())
        let split = input.isEmpty ? 0 : Int(input[0]) % input.count
        for part in [input[..<split], input[split...]] {
            parser.append(part)
            var events = 0
            while events < 10_000 {
                events += 1
                switch parser.next() {
                case .needMoreData, .error: events = .max
                case .expectContinue, .request: continue
                }
            }
        }
    }

    /// The JSON reader: a document it accepts is written back and must read back the same.
    static func json(_ input: [UInt8]) {
        guard let parsed = try? JSON.parse(input) else { return }
        let again = try? JSON.parse(parsed.serializedBytes)
        precondition(again == parsed, "JSON: a written document reads back differently")
    }

    /// The provider token (JWT) parser, given the input as an `authorization` header value, and the ES256 check of
    /// what it parses (raw `r||s` or DER) with the demo key, whose seed token verifies.
    static func providerToken(_ input: [UInt8]) {
        guard case .success(let token) = ProviderToken.parse(authorization: String(decoding: input, as: UTF8.self))
        else { return }
        _ = demoKey.verify(signature: token.signature, message: token.signingInput)
    }

    /// The repository's demo key (scripts/fuzz runs from the repository), else a new one.
    static let demoKey: ES256PublicKey = {
        if let pem = readFile("config/keys/AuthKey_DEMOKEY123.p8"),
            let key = try? ES256PrivateKey(pem: String(decoding: pem, as: UTF8.self))
        {
            return key.publicKey
        }
        guard let key = try? ES256PrivateKey.generate() else { fatalError("no P-256 key") }
        return key.publicKey
    }()

    /// The APNs header checks and payload validator: the input's first line is `name: value` headers separated by
    /// `|`, the rest the payload.
    static func push(_ input: [UInt8]) {
        let newline = input.firstIndex(of: 0x0A) ?? input.endIndex
        let headerText = String(decoding: input[..<newline], as: UTF8.self)
        let headers = headerText.split(separator: "|").map { field in
            let parts = field.split(separator: ":", maxSplits: 1)
            return (name: String(parts.first ?? "").lowercased(), value: String(parts.count > 1 ? parts[1] : ""))
        }
        let body = Array(input[min(newline + 1, input.endIndex)...])
        let pushType = (try? PushRequestValidator.headers(headers).get())?.pushType
        _ = PushRequestValidator.payload(body, pushType: pushType)
    }
}

/// The bytes of a file, nil when it cannot be opened.
func readFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count <= 0 { return bytes }
        bytes += chunk[..<count]
    }
}

/// A line on standard error.
func complain(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
}

#if FUZZING
/// libFuzzer's driver, for a `main` of our own (SwiftPM names the executable's entry point).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

nonisolated(unsafe) private var selected: (@Sendable ([UInt8]) -> Void)?

/// The entry libFuzzer's library refers to (the driver below is given the same function).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selected?(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

@main struct Fuzz {
    static func main() {
        guard let name = getenv("APNS_SANDBOX_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTargets.all[name]
        else {
            complain("APNS_SANDBOX_FUZZ_TARGET must name one of: \(FuzzTargets.all.keys.sorted().joined(separator: ", "))")
            exit(2)
        }
        selected = target
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzerTestOneInput(data, size) })
    }
}
#else
@main struct Replay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTargets.all[name] else {
            complain("usage: apns-sandbox-fuzz TARGET FILE... (targets: \(FuzzTargets.all.keys.sorted().joined(separator: ", ")))")
            exit(2)
        }
        for path in arguments.dropFirst() {
            guard let input = readFile(path) else {
                complain("apns-sandbox-fuzz: cannot open \(path)")
                exit(1)
            }
            target(input)
        }
        print("apns-sandbox-fuzz: \(arguments.count - 1) inputs of \(name) ran")
    }
}
#endif
