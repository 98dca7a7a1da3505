// APNs Sandbox — alert localization: language fallback and format specifiers.
import APNsProtocol
import Sandbox
import Testing

@Suite struct AlertLocalizerTests {
    /// fr_CA looks in fr_CA, fr-CA, fr, Base, en, then shows the key.
    @Test func localeFallsBackToLanguageThenEnglishThenKey() {
        let localizer = AlertLocalizer(strings: [
            "fr_CA": ["ONLY_CA": "canadien"],
            "fr-CA": ["DASH": "tiret"],
            "fr": ["ONLY_CA": "français", "FR": "français"],
            "en": ["EN": "english", "FR": "french"],
        ])
        #expect(AlertLocalizer.searchOrder(for: "fr_CA") == ["fr_CA", "fr-CA", "fr", "Base", "en"])
        #expect(AlertLocalizer.searchOrder(for: "zh-Hans_TW")
            == ["zh-Hans_TW", "zh_Hans_TW", "zh-Hans-TW", "zh_Hans", "zh-Hans", "zh", "Base", "en"])
        #expect(localizer.localize(key: "ONLY_CA", arguments: [], locale: "fr_CA") == "canadien")
        #expect(localizer.localize(key: "DASH", arguments: [], locale: "fr_CA") == "tiret")
        #expect(localizer.localize(key: "FR", arguments: [], locale: "fr_CA") == "français")
        #expect(localizer.localize(key: "EN", arguments: [], locale: "fr_CA") == "english")
        #expect(localizer.localize(key: "MISSING %@", arguments: ["x"], locale: "fr_CA") == "MISSING x")
        #expect(localizer.localize(key: "ONLY_CA", arguments: [], locale: "de_DE") == "ONLY_CA")
    }

    /// Base comes before en.
    @Test func baseComesBeforeEnglish() {
        let localizer = AlertLocalizer(strings: ["Base": ["K": "base"], "en": ["K": "en"]])
        #expect(localizer.localize(key: "K", arguments: [], locale: "ja_JP") == "base")
    }

    /// Positional `%n$@` is 1-based; `%@` takes arguments in order; `%%` is a percent sign.
    @Test func formatSpecifiers() {
        #expect(AlertLocalizer.format("%2$@ and %1$@ have invited you to play Monopoly", arguments: ["Jenna", "Frank"])
            == "Frank and Jenna have invited you to play Monopoly")
        #expect(AlertLocalizer.format("%@ sent %@", arguments: ["Ann", "a photo"]) == "Ann sent a photo")
        #expect(AlertLocalizer.format("100%% done", arguments: []) == "100% done")
        #expect(AlertLocalizer.format("%d new, %i old, %ld all", arguments: ["3", "4", "7"]) == "3 new, 4 old, 7 all")
        #expect(AlertLocalizer.format("%1$@ %1$@ %@", arguments: ["a", "b"]) == "a a a")
        #expect(AlertLocalizer.format("[%@][%3$@]", arguments: []) == "[][]")
        #expect(AlertLocalizer.format("50%! %", arguments: ["x"]) == "50%! %")
        // As in printf, `% o` is a conversion (space flag, octal), so "50% off" consumes an argument.
        #expect(AlertLocalizer.format("50% off", arguments: ["x"]) == "50xff")
        #expect(AlertLocalizer.format("héllo %@ 👋", arguments: ["wörld"]) == "héllo wörld 👋")
    }

    /// Delivery localizes title, subtitle and body with the device locale; `loc-key` wins over `body`.
    @Test func deliveryLocalizesForTheDeviceLocale() throws {
        let app = AppRecord(bundleID: "com.example.a", teamID: "T", strings: [
            "fr": ["INVITE": "%2$@ et %1$@ vous invitent", "TITLE": "Partie de %@", "SUB": "100%%"],
            "en": ["INVITE": "%2$@ and %1$@ invite you"],
        ])
        let harness = DeliveryHarness(locale: "fr_CA", appRecords: [app])
        let payload = """
            {"aps":{"alert":{"title-loc-key":"TITLE","title-loc-args":["Monopoly"],"subtitle-loc-key":"SUB",\
            "body":"ignored","loc-key":"INVITE","loc-args":["Jenna","Frank"]}}}
            """
        let id = harness.push(payload: payload).apnsID
        let content = try #require(harness.record(id)?.displayed)
        #expect(content.title == "Partie de Monopoly")
        #expect(content.subtitle == "100%")
        #expect(content.body == "Frank et Jenna vous invitent")
        #expect(content.userInfoJSON == "{}")
    }
}
