// APNs Sandbox — helpers shared by the APNsProtocol tests.
import APNsProtocol
import Support

extension Result {
    /// The success value, or nil.
    var value: Success? {
        if case .success(let value) = self { value } else { nil }
    }

    /// The failure, or nil.
    var error: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}

extension Result where Failure == APNsError {
    /// The failure's reason, or nil on success.
    var reason: APNsReason? { error?.reason }
}

/// Builds a compact JWT from JSON texts and signature bytes, the way a provider would.
func makeJWT(
    header: String = #"{"alg":"ES256","kid":"ABC123DEFG"}"#,
    claims: String = #"{"iss":"DEF123GHIJ","iat":1700000000}"#,
    signature: [UInt8] = Array(repeating: 0xA5, count: 64)
) -> String {
    Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8)) + "."
        + Base64URL.encode(signature)
}

/// A valid 64-digit (32-byte) device token.
let sampleTokenHex = String(repeating: "0123456789abcdef", count: 4)

/// A payload body of exactly `size` bytes: `{"aps":{"alert":"xxx…"}}`.
func payload(ofSize size: Int) -> [UInt8] {
    let frame = #"{"aps":{"alert":""}}"#
    return Array((#"{"aps":{"alert":""# + String(repeating: "x", count: size - frame.utf8.count) + #""}}"#).utf8)
}
