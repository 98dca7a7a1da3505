// APNs Sandbox — ServiceExtensionKit: Apple's UNNotificationAttachment and its option keys (reference §4.7).

import Foundation

/// Option key: a UTI (`"public.png"`) that says what the file is, instead of its file-name extension.
public let UNNotificationAttachmentOptionsTypeHintKey = "UNNotificationAttachmentOptionsTypeHintKey"
/// Option key: `true` hides the thumbnail.
public let UNNotificationAttachmentOptionsThumbnailHiddenKey = "UNNotificationAttachmentOptionsThumbnailHiddenKey"
/// Option key: the part of the image to use as thumbnail (a rectangle dictionary in unit coordinates).
public let UNNotificationAttachmentOptionsThumbnailClippingRectKey =
    "UNNotificationAttachmentOptionsThumbnailClippingRectKey"
/// Option key: the frame of a movie to use as thumbnail, in seconds.
public let UNNotificationAttachmentOptionsThumbnailTimeKey = "UNNotificationAttachmentOptionsThumbnailTimeKey"

/// An image, audio or video file shown with a notification (Apple's `UNNotificationAttachment`).
///
/// Like iOS, the initializer checks the file at once and throws ``UNError``: the URL must be a file URL to a
/// readable regular file whose type — from the `UNNotificationAttachmentOptionsTypeHintKey` option, otherwise
/// from the file-name extension — is a supported image, audio or video type within its size limit (images
/// 10 MB, audio 5 MB, video 50 MB). A file downloaded without an extension therefore throws, as it does on iOS;
/// give it one (or a type hint). The sandbox checks the content again after the extension ends and moves valid
/// files into its attachment store.
///
/// `@unchecked Sendable`: immutable after initialization (an `NSObject` subclass cannot be checked).
open class UNNotificationAttachment: NSObject, @unchecked Sendable {
    /// The identifier given at creation (a generated UUID if that was empty).
    open var identifier: String { storedIdentifier }
    /// The file URL.
    open var url: URL { storedURL }
    /// The file's type as a UTI, such as `public.png`.
    open var type: String { storedType }

    private let storedIdentifier: String
    private let storedURL: URL
    private let storedType: String
    /// The `UNNotificationAttachmentOptionsTypeHintKey` option, sent as `options.typeHint`. (The thumbnail
    /// options are accepted and ignored: the sandbox draws no thumbnails.)
    let typeHint: String?

    /// Creates an attachment for a local file.
    ///
    /// - Parameters:
    ///   - identifier: A unique identifier; an empty string gets a generated one.
    ///   - url: A file URL the extension can read (its temporary directory or the app group).
    ///   - options: `UNNotificationAttachmentOptions…Key` entries, or `nil`.
    /// - Throws: ``UNError`` with `attachmentInvalidURL`, `attachmentUnrecognizedType` or
    ///   `attachmentInvalidFileSize`.
    public init(identifier: String, url: URL, options: [AnyHashable: Any]? = nil) throws {
        let options = options ?? [:]
        guard url.isFileURL else {
            throw UNError(.attachmentInvalidURL, "not a file URL: \(url.absoluteString)")
        }
        let fileURL = url.standardizedFileURL
        let path = fileURL.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            FileManager.default.isReadableFile(atPath: path)
        else {
            throw UNError(.attachmentInvalidURL, "no readable file at \(path)")
        }
        let hint = options[UNNotificationAttachmentOptionsTypeHintKey].map { "\($0)" }
        let kind: AttachmentType
        if let hint {
            guard let hinted = AttachmentType.forTypeIdentifier(hint) else {
                throw UNError(.attachmentUnrecognizedType, "unsupported type hint \(hint)")
            }
            kind = hinted
        } else {
            guard let byExtension = AttachmentType.forFileExtension(fileURL.pathExtension) else {
                throw UNError(
                    .attachmentUnrecognizedType,
                    "cannot tell the type of \(fileURL.lastPathComponent) (no known file extension and no type hint)")
            }
            kind = byExtension
        }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        let size = (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        guard size > 0, size <= kind.category.maximumBytes else {
            throw UNError(
                .attachmentInvalidFileSize,
                "\(fileURL.lastPathComponent) is \(size) bytes; \(kind.category) attachments must be 1 to "
                    + "\(kind.category.maximumBytes) bytes")
        }

        storedIdentifier = identifier.isEmpty ? UUID().uuidString : identifier
        storedURL = fileURL
        storedType = kind.typeIdentifier
        typeHint = hint
        super.init()
    }

    open override var description: String {
        "<UNNotificationAttachment: identifier: \(identifier), url: \(url.absoluteString), type: \(type)>"
    }
}

/// A supported attachment type: its UTI, file extensions and category (reference §4.7).
struct AttachmentType: Sendable {
    enum Category: CustomStringConvertible, Sendable {
        case image, audio, video

        var maximumBytes: Int64 {
            switch self {
            case .image: 10_000_000
            case .audio: 5_000_000
            case .video: 50_000_000
            }
        }

        var description: String {
            switch self {
            case .image: "image"
            case .audio: "audio"
            case .video: "video"
            }
        }
    }

    let typeIdentifier: String
    let extensions: [String]
    let category: Category

    static let all: [AttachmentType] = [
        AttachmentType(typeIdentifier: "public.jpeg", extensions: ["jpg", "jpeg", "jpe"], category: .image),
        AttachmentType(typeIdentifier: "public.png", extensions: ["png"], category: .image),
        AttachmentType(typeIdentifier: "com.compuserve.gif", extensions: ["gif"], category: .image),
        AttachmentType(typeIdentifier: "public.mp3", extensions: ["mp3"], category: .audio),
        AttachmentType(typeIdentifier: "public.mpeg-4-audio", extensions: ["m4a"], category: .audio),
        AttachmentType(typeIdentifier: "public.aac-audio", extensions: ["aac"], category: .audio),
        AttachmentType(typeIdentifier: "public.aiff-audio", extensions: ["aiff", "aif"], category: .audio),
        AttachmentType(typeIdentifier: "public.aifc-audio", extensions: ["aifc"], category: .audio),
        AttachmentType(typeIdentifier: "com.microsoft.waveform-audio", extensions: ["wav", "wave"], category: .audio),
        AttachmentType(typeIdentifier: "public.mpeg-4", extensions: ["mp4", "m4v"], category: .video),
        AttachmentType(typeIdentifier: "public.mpeg", extensions: ["mpg", "mpeg", "mpe"], category: .video),
        AttachmentType(typeIdentifier: "public.mpeg-2-video", extensions: ["m2v"], category: .video),
        AttachmentType(typeIdentifier: "public.avi", extensions: ["avi"], category: .video),
    ]

    /// The type for a UTI (`kUTTypeGIF` is `com.compuserve.gif`, `kUTTypeWaveformAudio` is
    /// `com.microsoft.waveform-audio`, `kUTTypeAVIMovie` is `public.avi`).
    static func forTypeIdentifier(_ identifier: String) -> AttachmentType? {
        let lowered = identifier.lowercased()
        return all.first { $0.typeIdentifier == lowered }
    }

    static func forFileExtension(_ pathExtension: String) -> AttachmentType? {
        let lowered = pathExtension.lowercased()
        guard !lowered.isEmpty else { return nil }
        return all.first { $0.extensions.contains(lowered) }
    }
}

/// An error from UserNotifications (Apple's `UNError`); `catch UNError.attachmentInvalidURL` works as on iOS.
public struct UNError: Error, CustomStringConvertible, Sendable {
    /// Apple's `UNError.Code` values.
    public enum Code: Int, Sendable {
        case notificationsNotAllowed = 1
        case attachmentInvalidURL = 100
        case attachmentUnrecognizedType = 101
        case attachmentInvalidFileSize = 102
        case attachmentNotInDataStore = 103
        case attachmentMoveIntoDataStoreFailed = 104
        case attachmentCorrupt = 105
        case notificationInvalidNoDate = 1400
        case notificationInvalidNoContent = 1401
        case contentProvidingObjectNotAllowed = 1500
        case contentProvidingInvalid = 1501
    }

    /// The error domain, as `NSError` would report it.
    public static let errorDomain = "UNErrorDomain"

    public static var notificationsNotAllowed: Code { .notificationsNotAllowed }
    public static var attachmentInvalidURL: Code { .attachmentInvalidURL }
    public static var attachmentUnrecognizedType: Code { .attachmentUnrecognizedType }
    public static var attachmentInvalidFileSize: Code { .attachmentInvalidFileSize }
    public static var attachmentNotInDataStore: Code { .attachmentNotInDataStore }
    public static var attachmentMoveIntoDataStoreFailed: Code { .attachmentMoveIntoDataStoreFailed }
    public static var attachmentCorrupt: Code { .attachmentCorrupt }

    public let code: Code
    /// What was wrong, for logs.
    public let reason: String

    public init(_ code: Code, _ reason: String = "") {
        self.code = code
        self.reason = reason
    }

    public var description: String { "UNError(\(code), code \(code.rawValue)): \(reason)" }

    public var localizedDescription: String { description }
}

/// Lets `catch UNError.attachmentInvalidURL` match, as Apple's bridged error codes do.
public func ~= (code: UNError.Code, error: any Error) -> Bool {
    (error as? UNError)?.code == code
}

/// The `UNErrorDomain` constant.
public let UNErrorDomain = UNError.errorDomain
