// APNs Sandbox — tests for ES256 keys, signatures and provider tokens.
import Foundation
import Support
import Synchronization
import Testing

@testable import Crypto

@Suite struct ES256Tests {
    static let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJURUFNMTIzNDU2In0".utf8)

    /// A signature in raw and in DER form both verify with the key's public half.
    @Test func signAndVerifyRoundTrip() throws {
        let key = try ES256PrivateKey.generate()
        let raw = try key.sign(Self.message)
        let der = try key.signDER(Self.message)
        #expect(raw.count == 64)
        #expect(der.first == 0x30 && (8...72).contains(der.count))
        #expect(key.publicKey.verify(signature: raw, message: Self.message))
        #expect(key.publicKey.verify(signature: der, message: Self.message))
        #expect(ECDSASignature.raw(fromDER: der).flatMap(ECDSASignature.der(fromRaw:)) == der)
        #expect(key.publicKey.verify(signature: try key.sign([]), message: []))
    }

    /// Flipped bits, another key, wrong lengths and garbage all give false, never a crash.
    @Test func rejectsTamperedAndMalformedSignatures() throws {
        let key = try ES256PrivateKey.generate()
        let other = try ES256PrivateKey.generate()
        let raw = try key.sign(Self.message)
        let der = try key.signDER(Self.message)
        let publicKey = key.publicKey

        var flippedMessage = Self.message
        flippedMessage[3] ^= 0x01
        #expect(!publicKey.verify(signature: raw, message: flippedMessage))
        #expect(!publicKey.verify(signature: der, message: flippedMessage))
        for index in [0, 31, 32, 63] {
            var flipped = raw
            flipped[index] ^= 0x80
            #expect(!publicKey.verify(signature: flipped, message: Self.message), "raw bit flip at \(index)")
        }
        for index in der.indices {
            var flipped = der
            flipped[index] ^= 0x01
            #expect(!publicKey.verify(signature: flipped, message: Self.message), "DER bit flip at \(index)")
        }
        #expect(!other.publicKey.verify(signature: raw, message: Self.message))
        #expect(!other.publicKey.verify(signature: der, message: Self.message))

        #expect(!publicKey.verify(signature: Array(raw.dropLast()), message: Self.message))
        #expect(!publicKey.verify(signature: raw + [0], message: Self.message))
        #expect(!publicKey.verify(signature: Array(der.dropLast()), message: Self.message))
        #expect(!publicKey.verify(signature: der + [0], message: Self.message))
        #expect(!publicKey.verify(signature: [], message: Self.message))
        #expect(!publicKey.verify(signature: [UInt8](repeating: 0, count: 64), message: Self.message))
        #expect(!publicKey.verify(signature: [UInt8](repeating: 0xFF, count: 64), message: Self.message))
        #expect(!publicKey.verify(signature: [0x30, 0x80, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0, 0], message: Self.message))
        #expect(!publicKey.verify(signature: [0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00], message: Self.message))
        #expect(!publicKey.verify(signature: [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF], message: Self.message))
        // The converters refuse wrong lengths and trailing bytes.
        #expect(ECDSASignature.der(fromRaw: Array(raw.dropLast())) == nil)
        #expect(ECDSASignature.raw(fromDER: der + [0]) == nil)

        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...80, using: &generator)
            var garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if !garbage.isEmpty, Bool.random(using: &generator) { garbage[0] = 0x30 }
            #expect(!publicKey.verify(signature: garbage, message: Self.message))
        }
    }

    /// PKCS#8 output looks like Apple's .p8 and reloads to the same key; public PEM reloads too.
    @Test func pemRoundTrips() throws {
        let key = try ES256PrivateKey.generate()
        #expect(key.pkcs8PEM.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(key.publicKey.pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        let reloaded = try ES256PrivateKey(pem: key.pkcs8PEM)
        #expect(reloaded.pkcs8PEM == key.pkcs8PEM)
        #expect(reloaded.publicKey.pem == key.publicKey.pem)
        let fromPrivate = try ES256PublicKey(pem: key.pkcs8PEM)
        let fromPublic = try ES256PublicKey(pem: key.publicKey.pem)
        #expect(fromPrivate.pem == key.publicKey.pem)
        let signature = try key.sign(Self.message)
        #expect(fromPrivate.verify(signature: signature, message: Self.message))
        #expect(fromPublic.verify(signature: signature, message: Self.message))
    }

    /// Text that holds no key, and a public key given as a private key, throw CryptoError.
    @Test func rejectsUnreadablePEM() throws {
        for text in ["", "hello", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                     "-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----\n"] {
            #expect(throws: CryptoError.self) { try ES256PublicKey(pem: text) }
            #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: text) }
        }
        let publicPEM = try ES256PrivateKey.generate().publicKey.pem
        #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: publicPEM) }
    }

    /// Keys made by the openssl CLI load, its DER signatures verify, and it verifies ours.
    @Test func interoperatesWithOpenSSLCLI() throws {
        try withTemporaryDirectory { directory in
            let ecKey = directory + "/ec.pem", p8 = directory + "/AuthKey_TEST123456.p8"
            let publicKeyFile = directory + "/pub.pem", messageFile = directory + "/message"
            try requireOpenSSL(["ecparam", "-name", "prime256v1", "-genkey", "-out", ecKey])
            try requireOpenSSL(["pkcs8", "-topk8", "-nocrypt", "-in", ecKey, "-out", p8])
            try requireOpenSSL(["pkey", "-in", p8, "-pubout", "-out", publicKeyFile])
            try write(Self.message, to: messageFile)

            let p8Text = try String(contentsOfFile: p8, encoding: .utf8)
            #expect(p8Text.hasPrefix("-----BEGIN PRIVATE KEY-----"))
            let privateKey = try ES256PrivateKey(pem: p8Text)
            // `ecparam -genkey` writes an EC PARAMETERS block, then the traditional EC PRIVATE KEY.
            let traditional = try ES256PrivateKey(pem: String(contentsOfFile: ecKey, encoding: .utf8))
            #expect(traditional.publicKey.pem == privateKey.publicKey.pem)
            let cliPublicKey = try ES256PublicKey(pem: String(contentsOfFile: publicKeyFile, encoding: .utf8))
            #expect(cliPublicKey.pem == privateKey.publicKey.pem)

            let cliSignature = directory + "/cli.sig"
            try requireOpenSSL(["dgst", "-sha256", "-sign", p8, "-out", cliSignature, messageFile])
            let cliDER = try read(cliSignature)
            #expect(cliPublicKey.verify(signature: cliDER, message: Self.message))
            #expect(privateKey.publicKey.verify(signature: cliDER, message: Self.message))
            let cliRaw = try #require(ECDSASignature.raw(fromDER: cliDER))
            #expect(cliPublicKey.verify(signature: cliRaw, message: Self.message))
            #expect(!cliPublicKey.verify(signature: cliDER, message: Self.message + [0]))

            let ourSignature = directory + "/ours.sig"
            try write(privateKey.signDER(Self.message), to: ourSignature)
            let verified = try openssl(["dgst", "-sha256", "-verify", publicKeyFile, "-signature", ourSignature,
                                        messageFile])
            #expect(verified.status == 0 && verified.output.contains("Verified OK"), "\(verified.output)")
            let rawAsDER = try #require(ECDSASignature.der(fromRaw: privateKey.sign(Self.message)))
            try write(rawAsDER, to: ourSignature)
            #expect(try openssl(["dgst", "-sha256", "-verify", publicKeyFile, "-signature", ourSignature,
                                 messageFile]).status == 0)

            // An encrypted key is refused (no passphrase prompt).
            let encrypted = directory + "/encrypted.p8"
            try requireOpenSSL(["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "pass:secret", "-in", ecKey,
                                "-out", encrypted])
            let encryptedText = try String(contentsOfFile: encrypted, encoding: .utf8)
            #expect(encryptedText.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
            #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: encryptedText) }
            #expect(throws: CryptoError.self) { try ES256PublicKey(pem: encryptedText) }

            // And our .p8 output is a key the CLI can sign with.
            let ourP8 = directory + "/ours.p8"
            let generated = try ES256PrivateKey.generate()
            try write(Array(generated.pkcs8PEM.utf8), to: ourP8)
            try requireOpenSSL(["dgst", "-sha256", "-sign", ourP8, "-out", cliSignature, messageFile])
            #expect(generated.publicKey.verify(signature: try read(cliSignature), message: Self.message))
        }
    }

    /// RSA, Ed25519 and P-384 keys are rejected with a CryptoError that says why.
    @Test func rejectsKeysThatAreNotP256() throws {
        try withTemporaryDirectory { directory in
            let cases: [(name: String, arguments: [String])] = [
                ("ed25519", ["genpkey", "-algorithm", "ed25519"]),
                ("rsa", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"]),
                ("p384", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
            ]
            for (name, arguments) in cases {
                let privatePath = directory + "/\(name).pem", publicPath = directory + "/\(name)-pub.pem"
                try requireOpenSSL(arguments + ["-out", privatePath])
                try requireOpenSSL(["pkey", "-in", privatePath, "-pubout", "-out", publicPath])
                for path in [privatePath, publicPath] {
                    let pem = try String(contentsOfFile: path, encoding: .utf8)
                    let error = try #require(throws: CryptoError.self) { try ES256PublicKey(pem: pem) }
                    #expect(error.description.contains("unsupported key"), "\(name): \(error)")
                    #expect(error.description.contains("P-256"), "\(name): \(error)")
                }
                let pem = try String(contentsOfFile: privatePath, encoding: .utf8)
                #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: pem) }
            }
        }
    }

    /// The token has three unpadded base64url parts, the documented header and claims, and a
    /// raw signature over the first two parts.
    @Test func providerTokenHasAPNsShape() throws {
        let key = try ES256PrivateKey.generate()
        let token = try ProviderTokenSigner.makeToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ",
                                                      issuedAt: 1_700_000_000, key: key)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))

        let header = try #require(Base64URL.decode(parts[0]))
        let headerJSON = try #require(try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any])
        #expect(headerJSON["alg"] as? String == "ES256")
        #expect(headerJSON["kid"] as? String == "ABC123DEFG")
        let claims = try #require(Base64URL.decode(parts[1]))
        let claimsJSON = try #require(try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any])
        #expect(claimsJSON["iss"] as? String == "DEF123GHIJ")
        #expect((claimsJSON["iat"] as? NSNumber)?.int64Value == 1_700_000_000)

        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        #expect(key.publicKey.verify(signature: signature, message: signingInput))
        #expect(!key.publicKey.verify(signature: signature, message: signingInput + [0x2E]))
    }

    /// Odd characters in key and team IDs stay valid JSON.
    @Test func providerTokenEscapesJSON() throws {
        let key = try ES256PrivateKey.generate()
        let token = try ProviderTokenSigner.makeToken(keyID: "a\"b\\c\n\u{1}", teamID: "ü", issuedAt: -5, key: key)
        let parts = token.split(separator: ".")
        let header = try #require(Base64URL.decode(parts[0]))
        let headerJSON = try #require(try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any])
        #expect(headerJSON["kid"] as? String == "a\"b\\c\n\u{1}")
        let claims = try #require(Base64URL.decode(parts[1]))
        let claimsJSON = try #require(try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any])
        #expect(claimsJSON["iss"] as? String == "ü")
        #expect((claimsJSON["iat"] as? NSNumber)?.int64Value == -5)
    }

    /// Base64url encodes without padding and decodes padded or unpadded text, rejecting bad input.
    @Test func base64URLRoundTrips() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode([]) == "")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64URL.decode("-_8=") == [0xFB, 0xFF])
        #expect(Base64URL.decode("+/8") == nil)
        #expect(Base64URL.decode("abcde") == nil)
        #expect(Base64URL.decode("ab$d") == nil)
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    /// One public key verifies correctly from many threads at once.
    @Test func verifiesConcurrently() throws {
        let key = try ES256PrivateKey.generate()
        let signature = try key.sign(Self.message)
        let publicKey = key.publicKey
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for round in 0..<100 {
                let good = publicKey.verify(signature: signature, message: Self.message)
                let bad = publicKey.verify(signature: signature, message: Self.message + [UInt8(round)])
                if !good || bad { failures.add(1, ordering: .relaxed) }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }
}

