// APNs Sandbox — listen addresses.
import Support
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

@Suite struct ClientAddressTests {
    /// Per-client limits count an IPv4 client the same on an IPv4 and a dual-stack listener, and
    /// never by port.
    @Test func ipv4MappedIPv6IsTheIPv4Client() throws {
        let v4 = try SocketAddress(host: "192.0.2.7", port: 1000)
        let mapped = try SocketAddress(host: "::ffff:192.0.2.7", port: 2000)
        #expect(v4.client == mapped.client)
        #expect(v4.client.isIPv4)
        #expect(mapped.clientHost == "192.0.2.7")
        #expect(try SocketAddress(host: "192.0.2.8", port: 1000).client != v4.client)
        let v6 = try SocketAddress(host: "2001:db8::1", port: 1)
        #expect(!v6.client.isIPv4)
        #expect(v6.clientHost == "2001:db8::1")
        #expect(try SocketAddress(host: "2001:db8::1", port: 2).client == v6.client)
        #expect(v4.client.description == "192.0.2.7")
    }

    /// An IPv6 client counts by its /64 (one host usually has a whole one); loopback by itself.
    @Test func ipv6ClientsCountByTheirSlash64() throws {
        let one = try SocketAddress(host: "2001:db8:0:1::1", port: 1)
        let sameNetwork = try SocketAddress(host: "2001:db8:0:1:ffff:ffff:ffff:ffff", port: 1)
        let otherNetwork = try SocketAddress(host: "2001:db8:0:2::1", port: 1)
        #expect(one.client == sameNetwork.client)
        #expect(one.client != otherNetwork.client)
        #expect(one.client.description == "2001:db8:0:1::/64")
        let loopback = try SocketAddress(host: "::1", port: 1)
        #expect(loopback.client.description == "0:0:0:0:0:0:0:1")
        let two = try SocketAddress(host: "::2", port: 1)
        #expect(loopback.client != two.client)
    }
}
