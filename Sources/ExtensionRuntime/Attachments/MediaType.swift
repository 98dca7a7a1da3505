// APNs Sandbox — the attachment types iOS accepts, told apart by content (Apple: UNNotificationAttachment, "Supported file types").

/// A supported attachment type, recognised by its leading bytes (not its name).
enum MediaType: String, Sendable, CaseIterable {
    case jpeg, png, gif
    case mp3, aac, m4a, aiff, wav
    case mp4, mpeg, avi

    enum Kind: String, Sendable {
        case image, audio, video

        /// Apple's per-kind size limits (§4.7): images 10 MB, audio 5 MB, video 50 MB (MiB here).
        var maxBytes: Int {
            switch self {
            case .image: 10 * 1024 * 1024
            case .audio: 5 * 1024 * 1024
            case .video: 50 * 1024 * 1024
            }
        }
    }

    var kind: Kind {
        switch self {
        case .jpeg, .png, .gif: .image
        case .mp3, .aac, .m4a, .aiff, .wav: .audio
        case .mp4, .mpeg, .avi: .video
        }
    }

    /// The MIME type stored in ``Sandbox/Attachment/type`` (and served with the file).
    var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .mp3: "audio/mpeg"
        case .aac: "audio/aac"
        case .m4a: "audio/mp4"
        case .aiff: "audio/aiff"
        case .wav: "audio/wav"
        case .mp4: "video/mp4"
        case .mpeg: "video/mpeg"
        case .avi: "video/x-msvideo"
        }
    }

    /// The file name extension of the stored copy.
    var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .mpeg: "mpg"
        default: rawValue
        }
    }

    /// Bytes ``sniff(_:)`` needs.
    static let headerLength = 16

    /// The type of a file starting with `header`, or nil when it is none of the supported ones.
    ///
    /// JPEG `FF D8 FF`; PNG `89 50 4E 47`; GIF `GIF87a`/`GIF89a`; MP3 `ID3` or an MPEG audio layer III frame
    /// sync (`FF Ex`/`FF Fx` with layer bits 01); AAC ADTS (frame sync with layer bits 00); ISO media
    /// `....ftyp<brand>`: brands `M4A `, `M4B `, `M4P ` are audio, any other video (MPEG-4);
    /// AIFF `FORM....AIFF`/`AIFC`; WAV `RIFF....WAVE`; AVI `RIFF....AVI `; MPEG program/video stream
    /// `00 00 01 BA`/`00 00 01 B3`.
    static func sniff(_ header: [UInt8]) -> MediaType? {
        func matches(_ bytes: [UInt8], at offset: Int = 0) -> Bool {
            header.count >= offset + bytes.count && Array(header[offset..<(offset + bytes.count)]) == bytes
        }
        func ascii(_ text: String, at offset: Int = 0) -> Bool { matches(Array(text.utf8), at: offset) }

        if matches([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if ascii("GIF87a") || ascii("GIF89a") { return .gif }
        if ascii("ID3") { return .mp3 }
        if header.count >= 2, header[0] == 0xFF, header[1] & 0xE0 == 0xE0 {
            switch (header[1] >> 1) & 0x03 {
            case 0x01: return .mp3
            case 0x00: return .aac
            default: return nil  // MPEG audio layers I and II: not in Apple's list
            }
        }
        if ascii("ftyp", at: 4) {
            return ["M4A ", "M4B ", "M4P "].contains { ascii($0, at: 8) } ? .m4a : .mp4
        }
        if ascii("FORM"), ascii("AIFF", at: 8) || ascii("AIFC", at: 8) { return .aiff }
        if ascii("RIFF") {
            if ascii("WAVE", at: 8) { return .wav }
            if ascii("AVI ", at: 8) { return .avi }
            return nil
        }
        if matches([0x00, 0x00, 0x01, 0xBA]) || matches([0x00, 0x00, 0x01, 0xB3]) { return .mpeg }
        return nil
    }
}
