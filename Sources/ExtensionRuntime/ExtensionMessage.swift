// APNs Sandbox — what an extension answers, read: an exec extension's stdout lines, a webhook extension's body.
import APNsProtocol

/// One message from an extension, read from bytes it wrote: a line of an exec extension's standard output
/// (docs/extension-protocol.md), or the body of a webhook extension's `200`. Total: any bytes give a message
/// (the fuzz target `extension-output` feeds it everything).
public enum ExtensionMessage: Sendable, Equatable {
    /// A blank line: ignored.
    case blank
    /// The content to show (`{"type":"content","content":{…}}`).
    case content(ExtensionContent)
    /// A timeline entry (`{"type":"log","message":…}`).
    case log(String)
    /// A JSON object of another `type`: noted in the timeline and ignored.
    case unknown(type: String?, excerpt: String)
    /// Not the protocol: what is wrong, for the timeline (before any content, the instance fails with it).
    case invalid(String)

    /// One line of an exec extension's standard output, without its `\n` (a trailing `\r` is dropped).
    public static func execLine(_ raw: [UInt8]) -> ExtensionMessage {
        var line = raw[...]
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x09 }) else { return .blank }
        guard let message = try? JSON.parse(Array(line)), message.members != nil else {
            return .invalid("stdout is not the protocol (a JSON object per line): \(excerpt(line))")
        }
        switch message["type"]?.string {
        case "content":
            guard let body = message["content"] else { return .invalid("a content message without a content object") }
            do {
                return .content(try ExtensionContent(json: body))
            } catch {
                return .invalid("invalid content: \(error)")
            }
        case "log":
            return .log(message["message"]?.text ?? message["message"].map(\.serialized) ?? "")
        case let type:
            return .unknown(type: type, excerpt: excerpt(line))
        }
    }

    /// A webhook extension's `200` body: the content object, or a whole content message.
    public static func webhookBody(_ body: [UInt8]) -> Result<ExtensionContent, ExtensionOutputError> {
        guard let value = try? JSON.parse(body), value.members != nil else {
            return .failure(ExtensionOutputError(
                "webhook response is not a JSON object: " + String(decoding: body.prefix(200), as: UTF8.self)))
        }
        let content = value["type"]?.string == "content" ? (value["content"] ?? .null) : value
        do {
            return .success(try ExtensionContent(json: content))
        } catch {
            return .failure(ExtensionOutputError("webhook response is not content: \(error)"))
        }
    }

    /// The first 200 bytes of a line, for the timeline.
    static func excerpt(_ line: ArraySlice<UInt8>) -> String {
        let text = String(decoding: line.prefix(200), as: UTF8.self)
        return line.count > 200 ? text + "…" : text
    }
}

/// What is wrong with an extension's answer, for the timeline.
public struct ExtensionOutputError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Splits an exec extension's standard output, as it arrives in chunks, into lines; the line still being read
/// is bounded (a longer one is dropped and reported: the protocol's 1 MiB line limit).
public struct ExtensionOutputLines: Sendable {
    private var partial: [UInt8] = []

    public init() {}

    /// The complete lines in what has arrived, without their `\n` (at `eof`, the unterminated rest too);
    /// `overlong` when the unfinished line has passed `maxLineBytes` (what was read of it is dropped).
    public mutating func append(_ bytes: [UInt8], eof: Bool, maxLineBytes: Int) -> (lines: [[UInt8]], overlong: Bool) {
        var lines: [[UInt8]] = []
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            if partial.isEmpty {
                lines.append(Array(bytes[start..<newline]))
            } else {
                lines.append(partial + bytes[start..<newline])
                partial = []
            }
            start = newline + 1
        }
        partial += bytes[start...]
        if eof {
            if !partial.isEmpty { lines.append(partial) }
            partial = []
        }
        guard partial.count > maxLineBytes else { return (lines, false) }
        partial = []
        return (lines, true)
    }
}
