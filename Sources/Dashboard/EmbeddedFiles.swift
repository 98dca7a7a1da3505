// APNs Sandbox — the table of the dashboard's built-in files (one line per file of Assets/).

/// Every file of `Sources/Dashboard/Assets`, by name. SwiftPM's `embedInCode` makes one
/// `PackageResources.<name with _ for .>` per file; a new file needs its line here (DashboardAssetTests
/// checks that the table and the directory agree).
enum EmbeddedFiles {
    static let all: [(String, [UInt8])] = [
        ("index.html", PackageResources.index_html),
        ("app.css", PackageResources.app_css),
        ("app.js", PackageResources.app_js),
        ("api.js", PackageResources.api_js),
        ("ui.js", PackageResources.ui_js),
        ("icon.svg", PackageResources.icon_svg),
        ("devices.js", PackageResources.devices_js),
        ("detail.js", PackageResources.detail_js),
        ("inbox.js", PackageResources.inbox_js),
        ("send.js", PackageResources.send_js),
        ("manage.js", PackageResources.manage_js),
        ("steer.js", PackageResources.steer_js),
    ]
}
