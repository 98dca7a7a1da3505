// APNs Sandbox — example notification service extension (decrypt, localize, attach media).
//
// Configure it for an app as an `exec` extension whose `path` is the built `ExampleNotificationService` binary.
// The class is in NotificationService.swift; this is the whole entry point.

import ServiceExtensionKit

ServiceExtensionHost.run(NotificationService())
