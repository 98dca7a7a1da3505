// APNs Sandbox — serving the dashboard's files: the built-in table, headers, validators, where it is served.
import Dashboard
import Foundation
@testable import Server
import Testing

@Suite struct DashboardAssetTests {
    static let assetsDirectory = TestPaths.packageRoot + "/Sources/Dashboard/Assets"

    /// Every file of Sources/Dashboard/Assets is in the binary, byte for byte (EmbeddedFiles lists them by hand).
    @Test func everyFileOfTheDirectoryIsBuiltIn() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.assetsDirectory).filter { !$0.hasPrefix(".") }.sorted()
        #expect(DashboardAssets.names == files)
        for name in files {
            let onDisk = try #require(FileManager.default.contents(atPath: Self.assetsDirectory + "/" + name))
            #expect(DashboardAssets.embedded.asset(named: name)?.bytes == Array(onDisk), "\(name)")
        }
    }

    @Test func pageAndFilesAreServedWithAStrictPolicy() async throws {
        try await withServer { server in
            let page = try await curl(["-si", server.httpBase + "/"])
            let text = page.stdoutText.lowercased()
            #expect(text.hasPrefix("http/1.1 200"), "\(page.stdoutText)")
            #expect(text.contains("content-type: text/html; charset=utf-8"))
            #expect(text.contains("content-security-policy: default-src 'none'; script-src 'self'"))
            #expect(text.contains("x-frame-options: deny") && text.contains("x-content-type-options: nosniff"))
            #expect(text.contains(#"<script type="module" src="/dashboard/app.js">"#))

            let script = try await curl(["-s", "-D", "-", "-o", "/dev/null", server.httpBase + "/dashboard/app.js"])
            #expect(script.stdoutText.lowercased().contains("content-type: text/javascript"))
            let etag = try #require(script.stdoutText.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") })
                .dropFirst(5).trimmingCharacters(in: .whitespaces)
            let revalidated = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "if-none-match: \(etag)",
                                              server.httpBase + "/dashboard/app.js"])
            #expect(revalidated.stdoutText == "304")
            for (path, status) in [("/dashboard/nothing.js", "404"), ("/dashboard/..%2fPackage.swift", "404")] {
                let answer = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", server.httpBase + path])
                #expect(answer.stdoutText == status, "\(path)")
            }
            let posted = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", server.httpBase + "/"])
            #expect(posted.stdoutText != "200")
        }
    }

    /// The page is public (it holds no data) where the admin side is served, even with a token required; the
    /// API behind it is not. A listener without the admin side, or `dashboard.enabled: false`, has no dashboard.
    @Test func servedWhereTheAdminSideIs() async throws {
        try await withServer(configure: {
            $0.admin.authentication = .required
            $0.admin.token = "dashboard-admin-token-0123456789"
        }) { server in
            let page = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", server.httpBase + "/"])
            #expect(page.stdoutText == "200")
            let api = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", server.httpBase + "/api/v1/devices"])
            #expect(api.stdoutText == "401")
        }
        try await withServer(configure: { $0.listeners[1].admin = false }) { server in
            let page = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", server.httpBase + "/"])
            #expect(page.stdoutText == "404")
        }
        try await withServer(configure: { $0.dashboard.enabled = false }) { server in
            let page = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", server.httpBase + "/dashboard/app.js"])
            #expect(page.stdoutText == "404")
        }
    }

    /// `dashboard.assetsDirectory`: the files are read at every request (working on the dashboard without a build).
    @Test func assetsDirectoryIsReadAtEveryRequest() async throws {
        let directory = try makeTemporaryDirectory("apns-dashboard-assets")
        try "<!doctype html><title>one</title>".write(toFile: directory + "/index.html", atomically: true, encoding: .utf8)
        try await withServer(configure: { $0.dashboard.assetsDirectory = directory }) { server in
            #expect(try await curl([server.httpBase + "/"]).stdoutText.contains("one"))
            try "<!doctype html><title>two</title>".write(toFile: directory + "/index.html", atomically: true, encoding: .utf8)
            #expect(try await curl([server.httpBase + "/"]).stdoutText.contains("two"))
            let hidden = try await curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", server.httpBase + "/dashboard/.secret"])
            #expect(hidden.stdoutText == "404")
        }
    }
}
