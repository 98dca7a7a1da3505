// APNs Sandbox — libcurl's easy and multi handles: the only code that touches them.
import CCurl

/// How libcurl says a transfer ended.
struct CurlResult {
    enum Kind {
        case ok
        /// `CURLE_FILESIZE_EXCEEDED`: the `Content-Length` was over `CURLOPT_MAXFILESIZE_LARGE`.
        case tooLarge
        /// Anything else: no connection, a timeout, TLS, too many redirects, a body callback that said stop.
        case failed
    }

    let kind: Kind
    /// `curl_easy_strerror`'s text ("Timeout was reached", "Couldn't connect to server").
    let message: String
}

/// One transfer's easy handle, configured from a request, with its header list.
///
/// Confined to the transfer thread. Body bytes go to `onData` as they arrive (on that thread, inside
/// `CurlMulti.perform()`); returning false aborts the transfer. The handle and the header list are freed
/// in `deinit`, which cannot run while a ``CurlMulti`` holds the object.
final class CurlEasy {
    /// The owner's name for this transfer.
    let tag: UInt64
    fileprivate let handle: UnsafeMutableRawPointer
    private var headers: UnsafeMutablePointer<curl_slist>?
    private let onData: (UnsafeRawBufferPointer) -> Bool

    /// Nil when libcurl cannot allocate a handle.
    init?(
        tag: UInt64, request: HTTPClient.Request, caFile: String?, usesProxyEnvironment: Bool = true,
        clientCertificate: HTTPClient.ClientCertificate? = nil, onData: @escaping (UnsafeRawBufferPointer) -> Bool
    ) {
        CurlMulti.initializeLibrary()
        guard let handle = curl_easy_init() else { return nil }
        self.tag = tag
        self.handle = handle
        self.onData = onData
        configure(request, caFile: caFile)
        // `http_proxy` and friends apply unless the client says otherwise (`*`: no host goes through one).
        if !usesProxyEnvironment { _ = CCurl_easy_setopt_string(handle, CURLOPT_NOPROXY, "*") }
        if let clientCertificate {
            _ = CCurl_easy_setopt_string(handle, CURLOPT_SSLCERT, clientCertificate.certificateFile)
            _ = CCurl_easy_setopt_string(handle, CURLOPT_SSLKEY, clientCertificate.privateKeyFile)
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headers)
    }

    /// The last response's status (`CURLINFO_RESPONSE_CODE`), 0 before one arrived.
    var responseCode: Int {
        var status = 0
        _ = CCurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return status
    }

    private static let writeBody: CCurl_write_callback = { pointer, size, count, userdata in
        guard let userdata else { return 0 }
        let easy = Unmanaged<CurlEasy>.fromOpaque(userdata).takeUnretainedValue()
        let length = size * count
        // Anything but `length` makes libcurl stop with CURLE_WRITE_ERROR.
        return easy.onData(UnsafeRawBufferPointer(start: pointer, count: length)) ? length : 0
    }

    private func configure(_ request: HTTPClient.Request, caFile: String?) {
        let timeout = max(1, request.timeoutMilliseconds)
        _ = CCurl_easy_setopt_string(handle, CURLOPT_URL, request.url)
        _ = CCurl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = CCurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(timeout))
        let connectTimeout = request.connectTimeoutMilliseconds.map { max(1, $0) } ?? min(timeout, 10_000)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout))
        if case .follow(let limit) = request.redirects {
            _ = CCurl_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
            _ = CCurl_easy_setopt_long(handle, CURLOPT_MAXREDIRS, max(0, limit))
            _ = CCurl_easy_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        }
        if request.maxResponseBytes < Int.max {
            _ = CCurl_easy_setopt_off(handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxResponseBytes))
        }
        if request.decodesContent {
            // The empty string: every encoding this libcurl was built to decode.
            _ = CCurl_easy_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, "")
        }
        if let caFile { _ = CCurl_easy_setopt_string(handle, CURLOPT_CAINFO, caFile) }
        configureMethod(request)
        for (name, value) in request.headers {
            // "Name;" is libcurl's spelling of a header with an empty value ("Name:" would remove it).
            headers = curl_slist_append(headers, value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers))
        _ = CCurl_easy_setopt_write_function(handle, Self.writeBody)
        _ = CCurl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(self).toOpaque())
    }

    private func configureMethod(_ request: HTTPClient.Request) {
        let method = request.method.uppercased()
        guard request.body != nil || method == "POST" else {
            switch method {
            case "GET": break
            case "HEAD": _ = CCurl_easy_setopt_long(handle, CURLOPT_NOBODY, 1)
            default: _ = CCurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
            }
            return
        }
        let body = request.body ?? []
        // libcurl would otherwise wait up to a second for `100 Continue` before bodies over 1 KiB.
        headers = curl_slist_append(headers, "Expect:")
        _ = CCurl_easy_setopt_long(handle, CURLOPT_POST, 1)
        _ = CCurl_easy_setopt_long(handle, CURLOPT_POSTFIELDSIZE, body.count)
        body.withUnsafeBytes { bytes in
            // COPYPOSTFIELDS copies POSTFIELDSIZE bytes now; an empty body still needs a valid pointer.
            let start = bytes.baseAddress ?? UnsafeRawPointer(("" as StaticString).utf8Start)
            _ = CCurl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: start))
        }
        // POST keeps libcurl's redirect rule (301/302/303 continue as GET); other methods are sent as named.
        if method != "POST" { _ = CCurl_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method) }
    }
}

/// A multi handle: the connection pool and the transfers in progress.
///
/// `@unchecked Sendable`: everything but ``wakeup()`` is called on the transfer thread only;
/// `curl_multi_wakeup` is documented as callable from any thread.
final class CurlMulti: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    private var attached: [UnsafeMutableRawPointer: CurlEasy] = [:]

    private static let globalInit: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    /// `curl_global_init`, once, before the first handle.
    static func initializeLibrary() { _ = globalInit }

    /// - Parameters:
    ///   - maxConnections: The idle connections kept for reuse (`CURLMOPT_MAXCONNECTS`).
    ///   - maxConnectionsPerHost: `CURLMOPT_MAX_HOST_CONNECTIONS` (nil: no cap; requests beyond a cap wait
    ///     inside libcurl with their timeout running).
    init(maxConnections: Int, maxConnectionsPerHost: Int? = nil) {
        Self.initializeLibrary()
        guard let handle = curl_multi_init() else {
            // Only fails when libcurl cannot allocate its handle.
            preconditionFailure("curl_multi_init failed")
        }
        self.handle = handle
        _ = CCurl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, maxConnections)
        if let maxConnectionsPerHost {
            _ = CCurl_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        }
    }

    deinit {
        for easy in attached.keys { curl_multi_remove_handle(handle, easy) }
        curl_multi_cleanup(handle)
    }

    /// Starts `easy`; false when libcurl refused it.
    func add(_ easy: CurlEasy) -> Bool {
        guard curl_multi_add_handle(handle, easy.handle) == CURLM_OK else { return false }
        attached[easy.handle] = easy
        return true
    }

    /// Stops a transfer that has not finished.
    func remove(_ easy: CurlEasy) {
        guard attached.removeValue(forKey: easy.handle) != nil else { return }
        curl_multi_remove_handle(handle, easy.handle)
    }

    /// Moves every transfer along; returns the ones that finished (no longer attached).
    func perform() -> [(CurlEasy, CurlResult)] {
        var running: Int32 = 0
        curl_multi_perform(handle, &running)
        var finished: [(CurlEasy, CurlResult)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            var code = CURLE_OK
            guard let done = CCurl_multi_done(message, &code), let easy = attached.removeValue(forKey: done) else {
                continue
            }
            curl_multi_remove_handle(handle, done)
            let kind: CurlResult.Kind = switch code {
            case CURLE_OK: .ok
            case CURLE_FILESIZE_EXCEEDED: .tooLarge
            default: .failed
            }
            finished.append((easy, CurlResult(kind: kind, message: String(cString: curl_easy_strerror(code)))))
        }
        return finished
    }

    /// Waits for socket activity, a timeout libcurl needs, ``wakeup()``, or `milliseconds`.
    func wait(milliseconds: Int32) {
        curl_multi_poll(handle, nil, 0, milliseconds, nil)
    }

    /// Ends a ``wait(milliseconds:)`` early; from any thread.
    func wakeup() {
        curl_multi_wakeup(handle)
    }
}
