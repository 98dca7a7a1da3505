// APNs Sandbox — listen addresses.
import Testing
import Transport

@Suite struct SocketAddressTests {
    /// IPv4, IPv6 (bare or bracketed) and `localhost` parse; names that need DNS do not.
    @Test func parsesNumericAddresses() throws {
        let v4 = try SocketAddress(host: "127.0.0.1", port: 8080)
        #expect(v4.description == "127.0.0.1:8080")
        let v6 = try SocketAddress(host: "::1", port: 2197)
        #expect(v6.description == "[::1]:2197")
        let bracketed = try SocketAddress(host: "[::]", port: 1)
        #expect(bracketed.host == "::")
        #expect(try SocketAddress(host: "localhost", port: 1).host == "127.0.0.1")
        #expect(throws: SystemError.self) { try SocketAddress(host: "example.com", port: 1) }
    }
}
