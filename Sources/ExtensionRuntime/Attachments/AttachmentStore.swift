// APNs Sandbox — validating an extension's attachments and moving them into the notification's store.
import Foundation
import Sandbox

/// Where one instance's files live (see ``RuntimeConfiguration`` for the layout).
struct InstancePaths: Sendable {
    /// `<data>/instances/<instanceId>`: the exec working directory, emptied at the end (and reused).
    let temporaryDirectory: String
    /// `<data>/app-groups/<deviceToken>/<bundleId>`: shared by the app's instances on the device.
    let appGroupDirectory: String
    /// `<data>/attachments`.
    let attachmentsRoot: String
    /// The notification's folder under `attachmentsRoot`: `<apnsId>/<deviceToken>` (one apns-id may go to
    /// several devices, each with its own attachments).
    let attachmentFolder: String

    init(dataDirectory: String, instanceID: String, record: NotificationRecord) {
        temporaryDirectory = dataDirectory + "/instances/" + FileSystem.safeComponent(instanceID)
        appGroupDirectory = dataDirectory + "/app-groups/" + FileSystem.safeComponent(record.deviceToken) + "/"
            + FileSystem.safeComponent(record.bundleID)
        attachmentsRoot = dataDirectory + "/attachments"
        attachmentFolder = AttachmentFolders.folder(apnsID: record.apnsID, deviceToken: record.deviceToken)
    }
}

/// Where a notification's accepted attachments live, relative to `<data>/attachments`:
/// `<apnsId>/<deviceToken>` as safe path components. A device token longer than a path component
/// allows (Simulator tokens run to 400 hex digits) keeps its first 100 characters plus a hash of the
/// whole token, so that two long tokens never share a folder.
public enum AttachmentFolders {
    public static func folder(apnsID: String, deviceToken: String) -> String {
        apnsFolder(apnsID) + "/" + deviceFolder(deviceToken)
    }

    /// The folder of every attachment of this apns-id (the older layout kept files directly in it).
    public static func apnsFolder(_ apnsID: String) -> String {
        FileSystem.safeComponent(apnsID)
    }

    static func deviceFolder(_ deviceToken: String) -> String {
        let safe = FileSystem.safeComponent(deviceToken)
        guard deviceToken.utf8.count > 128 || safe != deviceToken else { return safe }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bits
        for byte in deviceToken.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(safe.prefix(100)) + "-" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Accepts an extension's attachments as iOS does after the extension finished (§4.7).
///
/// A file is accepted only if, after resolving symbolic links and `..`, it is a regular file inside the
/// instance's temporary directory or the app group; its type, by content (``MediaType/sniff(_:)``), is a
/// supported one; and it is within its kind's size limit. Accepted files are **moved** to
/// `<data>/attachments/<apnsId>/<deviceToken>/<identifier>.<ext>`; everything else is dropped with a timeline note.
struct AttachmentStore {
    let paths: InstancePaths

    func accept(
        _ requests: [ExtensionContent.AttachmentRequest], note: (ExtensionTimelineStep, String) -> Void
    ) -> [Attachment] {
        guard !requests.isEmpty else { return [] }
        let roots = [paths.temporaryDirectory, paths.appGroupDirectory].compactMap(FileSystem.realPath)
        var accepted: [Attachment] = []
        var usedNames: Set<String> = []
        for (index, request) in requests.enumerated() {
            let identifier = request.identifier.isEmpty ? "attachment-\(index + 1)" : request.identifier
            let label = "\"\(identifier)\""
            let name = FileSystem.safeComponent(identifier)
            guard !usedNames.contains(name) else {
                note(.attachmentDropped, "\(label): another attachment has the same identifier")
                continue
            }
            let located = location(of: request.location)
            guard let path = located.path else {
                note(.attachmentDropped, "\(label): \(located.problem ?? "not a file URL")")
                continue
            }
            guard let resolved = FileSystem.realPath(path) else {
                note(.attachmentDropped, "\(label): no such file \(path)")
                continue
            }
            guard roots.contains(where: { resolved.hasPrefix($0 + "/") }) else {
                note(.attachmentDropped, "\(label): \(path) is outside the instance's temporary directory and app group")
                continue
            }
            guard let size = FileSystem.regularFileSize(resolved) else {
                note(.attachmentDropped, "\(label): not a regular file")
                continue
            }
            guard let header = FileSystem.readPrefix(resolved, count: MediaType.headerLength),
                let type = MediaType.sniff(header)
            else {
                note(.attachmentDropped, "\(label): unsupported type (by content: not JPEG, PNG, GIF, MP3, AAC, M4A, "
                     + "AIFF, WAV, MPEG-4, MPEG or AVI)")
                continue
            }
            guard size <= type.kind.maxBytes else {
                note(.attachmentDropped, "\(label): \(type.mimeType) of \(size) bytes is over the \(type.kind.rawValue) "
                     + "limit of \(type.kind.maxBytes) bytes")
                continue
            }
            let folder = paths.attachmentsRoot + "/" + paths.attachmentFolder
            let fileName = name + "." + type.fileExtension
            do {
                do {
                    try FileSystem.makeDirectories(folder)
                    try FileSystem.move(resolved, to: folder + "/" + fileName)
                } catch {
                    // The attachment sweeper may have removed the empty apns-id folder between the two
                    // `mkdir`s: once more.
                    try FileSystem.makeDirectories(folder)
                    try FileSystem.move(resolved, to: folder + "/" + fileName)
                }
            } catch {
                note(.attachmentDropped, "\(label): could not be stored (\(error))")
                continue
            }
            usedNames.insert(name)
            accepted.append(Attachment(identifier: identifier, type: type.mimeType, size: size,
                                       path: paths.attachmentFolder + "/" + fileName))
            note(.attachmentAccepted, "\(label): \(type.mimeType), \(size) bytes")
        }
        return accepted
    }

    /// The path a `file://` URL or a path names; relative paths are relative to the temporary directory
    /// (the exec working directory).
    private func location(of text: String) -> (path: String?, problem: String?) {
        var path = text
        if text.lowercased().hasPrefix("file://") {
            var rest = String(text.dropFirst("file://".count))
            if rest.lowercased().hasPrefix("localhost/") { rest = String(rest.dropFirst("localhost".count)) }
            guard rest.hasPrefix("/") else { return (nil, "file URL with a host: \(text)") }
            guard let decoded = rest.removingPercentEncoding else { return (nil, "malformed file URL: \(text)") }
            path = decoded
        } else if text.contains("://") {
            return (nil, "not a file URL: \(text)")
        }
        guard !path.isEmpty, !path.contains("\0") else { return (nil, "empty path") }
        if !path.hasPrefix("/") { path = paths.temporaryDirectory + "/" + path }
        return (path, nil)
    }
}
