// APNs Sandbox — parsing and validating apps' service extension configurations.
import Testing

@testable import ExtensionRuntime

@Suite struct ExtensionConfigurationTests {
    /// A builtin configuration with every step parses with its defaults (decrypt critical, per-step timeouts).
    @Test func parsesBuiltinSteps() throws {
        let configuration = try ExtensionConfiguration(json: """
            {"kind":"builtin","budgetMs":2000,"graceMs":300,"steps":[
              {"step":"decrypt"},{"step":"localize"},
              {"step":"attach-media","fields":["img"],"timeoutMs":500,"identifier":"pic"},
              {"step":"rewrite","title":"[Processed] {{title}}"},
              {"step":"simulate","delayMs":10,"behavior":"call-twice","critical":true}]}
            """)
        #expect(configuration.budgetMilliseconds == 2000)
        #expect(configuration.graceMilliseconds == 300)
        #expect(configuration.memoryLimitMB == 24)
        guard case .builtin(let steps) = configuration.kind else {
            Issue.record("not builtin")
            return
        }
        #expect(steps.map(\.action.name) == ["decrypt", "localize", "attach-media", "rewrite", "simulate"])
        #expect(steps[0] == BuiltinStep(.decrypt(field: "encrypted_data"), isCritical: true, timeoutMilliseconds: 5000))
        #expect(steps[1].isCritical == false)
        #expect(steps[2].action == .attachMedia(fields: ["img"], identifier: "pic"))
        #expect(steps[2].timeoutMilliseconds == 500)
        #expect(steps[3].action == .rewrite(title: "[Processed] {{title}}", subtitle: nil, body: nil))
        #expect(steps[4].action == .simulate(delayMilliseconds: 10, behavior: .callTwice))
        #expect(steps[4].isCritical && steps[4].timeoutMilliseconds == nil)
    }

    /// exec and webhook configurations, with the exec memory default of 64 MiB.
    @Test func parsesExecAndWebhook() throws {
        let exec = try ExtensionConfiguration(json: #"{"kind":"exec","path":"/bin/x","arguments":["-v"],"environment":{"A":"b"}}"#)
        #expect(exec.kind == .exec(.init(path: "/bin/x", arguments: ["-v"], environment: ["A": "b"])))
        #expect(exec.memoryLimitMB == 64)
        #expect(exec.budgetMilliseconds == nil)
        let webhook = try ExtensionConfiguration(json: #"{"kind":"webhook","url":"http://127.0.0.1:1/x","timeoutMs":700}"#)
        #expect(webhook.kind == .webhook(.init(url: "http://127.0.0.1:1/x", timeoutMilliseconds: 700)))
    }

    /// Bad configurations fail with the key at fault.
    @Test func rejectsBadConfigurationsNamingTheKey() {
        let cases: [(String, String)] = [
            ("not json", ""),
            (#"[]"#, ""),
            (#"{"kind":"magic"}"#, "kind"),
            (#"{}"#, "kind"),
            (#"{"kind":"exec"}"#, "path"),
            (#"{"kind":"exec","path":""}"#, "path"),
            (#"{"kind":"exec","path":"/x","arguments":[1]}"#, "arguments[0]"),
            (#"{"kind":"exec","path":"/x","environment":{"HOME":"/"}}"#, "environment.HOME"),
            (#"{"kind":"webhook","url":"ftp://x"}"#, "url"),
            (#"{"kind":"builtin","steps":[{"step":"teleport"}]}"#, "steps[0].step"),
            (#"{"kind":"builtin","steps":[{"step":"simulate","behavior":"explode"}]}"#, "steps[0].behavior"),
            (#"{"kind":"builtin","steps":[{"step":"rewrite","titel":"x"}]}"#, "steps[0].titel"),
            (#"{"kind":"builtin","steps":[{"step":"decrypt","critical":"yes"}]}"#, "steps[0].critical"),
            (#"{"kind":"builtin","budgetMs":0}"#, "budgetMs"),
            (#"{"kind":"builtin","budgetMs":1.5}"#, "budgetMs"),
            (#"{"kind":"builtin","graceMs":-1}"#, "graceMs"),
            (#"{"kind":"builtin","memoryLimitMB":0}"#, "memoryLimitMB"),
            (#"{"kind":"builtin","budget":10}"#, "budget"),
        ]
        for (json, path) in cases {
            let error = #expect(throws: ExtensionConfigurationError.self, "\(json)") {
                try ExtensionConfiguration.validate(json: json)
            }
            #expect(error?.path == path, "\(json): \(error?.description ?? "")")
        }
    }
}
