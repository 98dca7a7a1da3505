// APNs Sandbox — environments from APNs host names.
import APNsProtocol
import Testing

@Suite struct APNsEnvironmentTests {
    /// Both sandbox names select development and the production name selects production.
    @Test(arguments: [
        ("api.sandbox.push.apple.com", APNsEnvironment.development),
        ("api.development.push.apple.com", .development),
        ("api.push.apple.com", .production),
    ])
    func mapsApplesHostNames(host: String, expected: APNsEnvironment) {
        #expect(APNsEnvironment(host: host) == expected)
    }

    /// Ports, upper case and a trailing dot do not change the answer.
    @Test(arguments: [
        ("api.push.apple.com:443", APNsEnvironment.production),
        ("api.push.apple.com:2197", .production),
        ("API.PUSH.APPLE.COM", .production),
        ("Api.Sandbox.Push.Apple.Com:443", .development),
        ("api.development.push.apple.com.:2197", .development),
        ("api.push.apple.com.", .production),
    ])
    func ignoresPortCaseAndTrailingDot(host: String, expected: APNsEnvironment) {
        #expect(APNsEnvironment(host: host) == expected)
    }

    /// Any other host, including near misses, selects no environment.
    @Test(arguments: [
        "", "localhost", "localhost:8443", "127.0.0.1:443", "[::1]:443", "push.apple.com", "api.push.apple.com.evil",
        "xapi.push.apple.com", "api.push.apple.co", "gateway.push.apple.com", "api.sandbox.push.apple.com..",
    ])
    func rejectsOtherHosts(host: String) {
        #expect(APNsEnvironment(host: host) == nil)
    }

    /// Raw values are the names used in configuration.
    @Test func rawValuesAreConfigurationNames() {
        #expect(APNsEnvironment.allCases.map(\.rawValue) == ["development", "production"])
    }
}
