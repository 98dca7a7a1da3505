// APNs Sandbox — the OpenAPI 3.1 description of the REST API, served at /api/v1/openapi.json.
import Foundation
import HTTP

/// The API's OpenAPI document. Kept next to the routes it describes; the schemathesis run in the
/// tests checks that the server answers as documented.
///
/// The document is `base` with the `fragments` of other files merged in (their `paths` and
/// `components.schemas`), so each group of routes can describe itself next to its code
/// (`OpenAPIDocument+<Area>.swift`). A fragment is a JSON object `{"paths": {…}, "components": {"schemas": {…}}}`;
/// a path or schema name defined twice is a programming error (the merge traps, and every test that serves
/// the document finds it).
enum OpenAPIDocument {
    static func register(on router: inout Router) {
        let body = Array(json.utf8)
        router.get("/api/v1/openapi.json") { _, _ in .response(.json(body)) }
    }

    /// The fragments merged into `base`, in this order.
    static let fragments: [String] = [faults, clock, steering, dashboard]

    /// The whole document (keys sorted).
    static let json: String = merged(base: base, fragments: fragments)

    static func merged(base: String, fragments: [String]) -> String {
        guard !fragments.isEmpty else { return base }
        func object(_ text: String) -> [String: Any] {
            guard let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                preconditionFailure("an OpenAPI fragment is not a JSON object")
            }
            return parsed
        }
        var document = object(base)
        var paths = document["paths"] as? [String: Any] ?? [:]
        var components = document["components"] as? [String: Any] ?? [:]
        var schemas = components["schemas"] as? [String: Any] ?? [:]
        for fragment in fragments.map(object) {
            for (path, item) in fragment["paths"] as? [String: Any] ?? [:] {
                precondition(paths[path] == nil, "OpenAPI path \(path) is described twice")
                paths[path] = item
            }
            let fragmentSchemas = (fragment["components"] as? [String: Any])?["schemas"] as? [String: Any] ?? [:]
            for (name, schema) in fragmentSchemas {
                precondition(schemas[name] == nil, "OpenAPI schema \(name) is described twice")
                schemas[name] = schema
            }
        }
        components["schemas"] = schemas
        document["paths"] = paths
        document["components"] = components
        guard let data = try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            preconditionFailure("the OpenAPI document cannot be written")
        }
        return String(decoding: data, as: UTF8.self)
    }

    static let base = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "APNs Sandbox API",
        "version": "1.0.0",
        "description": "Drive and inspect the simulated devices behind APNs Sandbox. Errors are {\"error\":{\"code\",\"message\"}}; a request body with a field the operation does not know is 400 unknown_field. When a listener serving this API is not loopback-only, every operation except health, ca.pem and this document needs the admin token (Authorization: Bearer, or Basic with the token as password): 401 without it. Requests that change state are refused with 403 from pages of another origin and with 415 unless their body is application/json. See docs/security.md."
      },
      "security": [ {}, { "adminToken": [] }, { "adminBasic": [] } ],
      "paths": {
        "/healthz": {
          "get": { "operationId": "health", "security": [], "responses": { "200": { "description": "Alive", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Status" } } } } } }
        },
        "/readyz": {
          "get": { "operationId": "ready", "security": [], "responses": {
            "200": { "description": "Serving", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Status" } } } },
            "503": { "description": "Draining (status draining), or not ready (status not-ready, with a reason: a store's writes fail, e.g. the disk is full, or its file is damaged)", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Readiness" } } } } } }
        },
        "/metrics": {
          "get": { "operationId": "getMetrics", "description": "Counters, gauges and histograms in Prometheus' text format 0.0.4 (docs/metrics.md). On the admin side: the admin token as a bearer token or HTTP Basic password when one is required.", "responses": {
            "200": { "description": "Every metric family", "content": { "text/plain": { "schema": { "type": "string" } } } } } }
        },
        "/ca.pem": {
          "get": { "operationId": "getCACertificate", "security": [], "description": "The sandbox CA (PEM) that clients trust for the TLS listener.", "responses": {
            "200": { "description": "The CA certificate", "content": { "application/x-pem-file": { "schema": { "type": "string" } } } } } }
        },
        "/": {
          "get": { "operationId": "getDashboard", "security": [], "description": "The web dashboard's page (docs: config/README.md, dashboard). It holds no data: the page asks the admin API for everything.", "responses": {
            "200": { "description": "The dashboard", "content": { "text/html": { "schema": { "type": "string" } } } },
            "304": { "description": "Not modified (If-None-Match)" } } }
        },
        "/dashboard/{file}": {
          "get": { "operationId": "getDashboardFile", "security": [], "description": "The dashboard's styles and scripts.",
            "parameters": [ { "name": "file", "in": "path", "required": true, "schema": { "type": "string", "examples": ["app.js"] } } ],
            "responses": {
              "200": { "description": "The file", "content": { "text/javascript": { "schema": { "type": "string" } }, "text/css": { "schema": { "type": "string" } } } },
              "304": { "description": "Not modified (If-None-Match)" },
              "404": { "$ref": "#/components/responses/Problem" } } }
        },
        "/3/device/{deviceToken}": {
          "post": {
            "operationId": "sendPush",
            "description": "APNs' provider API, as Apple serves it (HTTP/2, and HTTP/1.1 here): a provider token (`authorization: bearer <ES256 JWT>`) or a client certificate. Errors are Apple's: `{\"reason\": …}` with its status (docs/faults.md lists them). The dashboard's Send a push form uses it with a token from POST /api/v1/provider-tokens.",
            "security": [],
            "parameters": [
              { "name": "deviceToken", "in": "path", "required": true, "schema": { "type": "string" } },
              { "name": "authorization", "in": "header", "schema": { "type": "string" }, "description": "bearer <provider token>" },
              { "name": "apns-topic", "in": "header", "schema": { "type": "string" } },
              { "name": "apns-push-type", "in": "header", "schema": { "type": "string" } },
              { "name": "apns-priority", "in": "header", "schema": { "type": "string", "enum": ["10", "5", "1"] } },
              { "name": "apns-expiration", "in": "header", "schema": { "type": "string" } },
              { "name": "apns-collapse-id", "in": "header", "schema": { "type": "string" } },
              { "name": "apns-id", "in": "header", "schema": { "type": "string" } }
            ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object" } } } },
            "responses": {
              "200": { "description": "Accepted", "headers": { "apns-id": { "schema": { "type": "string" } }, "apns-unique-id": { "schema": { "type": "string" } } } },
              "default": { "description": "Apple's error", "content": { "application/json": { "schema": { "type": "object", "properties": { "reason": { "type": "string" }, "timestamp": { "type": "integer" } } } } } }
            }
          }
        },
        "/api/v1/devices": {
          "get": {
            "operationId": "listDevices",
            "parameters": [ { "$ref": "#/components/parameters/Limit" }, { "$ref": "#/components/parameters/Offset" } ],
            "responses": {
              "200": { "description": "Devices", "content": { "application/json": { "schema": { "type": "object", "required": ["devices"], "properties": { "devices": { "type": "array", "items": { "$ref": "#/components/schemas/Device" } } } } } } },
              "400": { "$ref": "#/components/responses/Problem" }
            }
          },
          "post": {
            "operationId": "createDevice",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/CreateDevice" } } } },
            "responses": {
              "201": { "description": "Created", "headers": { "Location": { "description": "/api/v1/devices/{token}", "schema": { "type": "string" } } }, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Device" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "409": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/devices/{token}": {
          "parameters": [ { "$ref": "#/components/parameters/DeviceToken" } ],
          "get": { "operationId": "getDevice", "responses": {
            "200": { "description": "The device", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Device" } } } },
            "404": { "$ref": "#/components/responses/Problem" } } },
          "patch": {
            "operationId": "updateDevice",
            "description": "Answered once what the change set off has committed: coming online, the stored pushes delivered, expired or batched as a device would; an uninstall, the app's stored pushes discarded. A service extension still running is not waited for; for a device pushed without pause, the change's first records are.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/UpdateDevice" } } } },
            "responses": {
              "200": { "description": "The updated device (with its new token after rotateToken)", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Device" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "404": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          },
          "delete": { "operationId": "deleteDevice", "responses": {
            "204": { "description": "Deleted" },
            "404": { "$ref": "#/components/responses/Problem" } } }
        },
        "/api/v1/devices/{token}/notification-center": {
          "parameters": [ { "$ref": "#/components/parameters/DeviceToken" } ],
          "get": { "operationId": "getNotificationCenter",
            "parameters": [ { "name": "limit", "in": "query", "description": "At most this many notifications, the newest (total counts them all); absent: all", "schema": { "type": "integer", "minimum": 1, "maximum": 10000 } } ],
            "responses": {
            "200": { "description": "What the user sees: displayed notifications after collapse, badges per app", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/NotificationCenter" } } } },
            "400": { "$ref": "#/components/responses/Problem" },
            "404": { "$ref": "#/components/responses/Problem" } } }
        },
        "/api/v1/apps": {
          "get": { "operationId": "listApps", "responses": {
            "200": { "description": "Apps", "content": { "application/json": { "schema": { "type": "object", "required": ["apps"], "properties": { "apps": { "type": "array", "items": { "$ref": "#/components/schemas/App" } } } } } } } } },
          "post": {
            "operationId": "createApp",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/CreateApp" } } } },
            "responses": {
              "201": { "description": "Created", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/App" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "403": { "description": "An exec extension whose program is not allowed (extensions.allowedExecutables) or that sets an environment", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } },
              "409": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/apps/{bundleId}": {
          "parameters": [ { "$ref": "#/components/parameters/BundleID" } ],
          "get": { "operationId": "getApp", "responses": {
            "200": { "description": "The app", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/App" } } } },
            "404": { "$ref": "#/components/responses/Problem" } } },
          "patch": {
            "operationId": "updateApp",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/AppRequest" } } } },
            "responses": {
              "200": { "description": "The updated app", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/App" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "403": { "description": "An exec extension whose program is not allowed (extensions.allowedExecutables) or that sets an environment", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } },
              "404": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/apps/{bundleId}/client-certificates": {
          "parameters": [ { "name": "bundleId", "in": "path", "required": true, "description": "Need not be a registered app", "schema": { "$ref": "#/components/schemas/BundleIDString" } } ],
          "post": {
            "operationId": "issueClientCertificate",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "type": "object", "additionalProperties": false, "properties": {
              "topics": { "type": "array", "items": { "$ref": "#/components/schemas/BundleIDString" }, "description": "Default: the bundle ID, bundleId.voip and bundleId.complication" },
              "environment": { "type": "string", "enum": ["development", "production", "both"], "default": "both" },
              "validityDays": { "type": "integer", "minimum": 1, "maximum": 36500, "default": 365 } } } } } },
            "responses": {
              "201": { "description": "A client certificate signed by the sandbox CA", "content": { "application/json": { "schema": { "type": "object",
                "required": ["bundleId", "topics", "environment", "certificatePem", "privateKeyPem"],
                "properties": { "bundleId": { "type": "string" }, "topics": { "type": "array", "items": { "type": "string" } }, "environment": { "type": "string" }, "certificatePem": { "type": "string" }, "privateKeyPem": { "type": "string" } } } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/notifications": {
          "get": {
            "operationId": "listNotifications",
            "parameters": [
              { "$ref": "#/components/parameters/DeviceFilter" }, { "$ref": "#/components/parameters/TopicFilter" },
              { "$ref": "#/components/parameters/BundleFilter" }, { "$ref": "#/components/parameters/StatusFilter" },
              { "$ref": "#/components/parameters/SinceFilter" }, { "$ref": "#/components/parameters/AfterFilter" },
              { "$ref": "#/components/parameters/UntilFilter" }, { "$ref": "#/components/parameters/PushTypeFilter" },
              { "$ref": "#/components/parameters/OutcomeFilter" }, { "$ref": "#/components/parameters/SearchFilter" }, { "$ref": "#/components/parameters/Limit" }, { "$ref": "#/components/parameters/Offset" }
            ],
            "responses": {
              "200": { "description": "Newest first", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/NotificationList" } } },
                "links": {
                  "GetFirstNotification": { "operationId": "getNotification", "parameters": { "apnsId": "$response.body#/notifications/0/apnsId" } },
                  "GetFirstNotificationDevice": { "operationId": "getDevice", "parameters": { "token": "$response.body#/notifications/0/deviceToken" } }
                } },
              "400": { "$ref": "#/components/responses/Problem" }
            }
          },
          "delete": {
            "operationId": "deleteNotifications",
            "parameters": [
              { "$ref": "#/components/parameters/DeviceFilter" }, { "$ref": "#/components/parameters/TopicFilter" },
              { "$ref": "#/components/parameters/BundleFilter" }, { "$ref": "#/components/parameters/StatusFilter" },
              { "$ref": "#/components/parameters/SinceFilter" }, { "$ref": "#/components/parameters/AfterFilter" },
              { "$ref": "#/components/parameters/UntilFilter" }, { "$ref": "#/components/parameters/PushTypeFilter" },
              { "$ref": "#/components/parameters/OutcomeFilter" }, { "$ref": "#/components/parameters/SearchFilter" },
              { "name": "all", "in": "query", "schema": { "type": "string", "enum": ["true"] }, "description": "Delete everything (required when no filter is given)" }
            ],
            "responses": {
              "200": { "description": "Deleted", "content": { "application/json": { "schema": { "type": "object", "required": ["deleted"], "properties": { "deleted": { "type": "integer" } } } } } },
              "400": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/notifications/wait": {
          "get": {
            "operationId": "waitForNotifications",
            "description": "Answers when `count` notifications matching the filters are final (200), or at `timeout` seconds (408) with what there is. Notifications that existed before the call count too; to wait for new ones, pass the cursor of an earlier answer as after= (or a since= time).",
            "parameters": [
              { "$ref": "#/components/parameters/DeviceFilter" }, { "$ref": "#/components/parameters/TopicFilter" },
              { "$ref": "#/components/parameters/BundleFilter" }, { "$ref": "#/components/parameters/StatusFilter" },
              { "$ref": "#/components/parameters/SinceFilter" }, { "$ref": "#/components/parameters/AfterFilter" },
              { "$ref": "#/components/parameters/UntilFilter" }, { "$ref": "#/components/parameters/PushTypeFilter" },
              { "$ref": "#/components/parameters/OutcomeFilter" }, { "$ref": "#/components/parameters/SearchFilter" },
              { "name": "count", "in": "query", "schema": { "type": "integer", "minimum": 1, "maximum": 100000 } },
              { "name": "timeout", "in": "query", "schema": { "type": "number", "minimum": 0, "maximum": 300 } }
            ],
            "responses": {
              "200": { "description": "Enough final notifications", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/NotificationList" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "408": { "description": "Timed out", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/NotificationList" } } } }
            }
          }
        },
        "/api/v1/notifications/{apnsId}": {
          "parameters": [ { "name": "apnsId", "in": "path", "required": true, "schema": { "type": "string" } } ],
          "get": {
            "operationId": "getNotification",
            "description": "One apns-id may name pushes to several devices: `device` picks one; without it, the newest notification with this apns-id.",
            "parameters": [
              { "name": "device", "in": "query", "description": "The device token the push went to", "schema": { "type": "string" } },
              { "name": "wait", "in": "query", "description": "Seconds to wait for a final status", "schema": { "type": "number", "minimum": 0, "maximum": 300 } }
            ],
            "responses": {
              "200": { "description": "The record", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Notification" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "404": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/notifications/{apnsId}/attachments/{identifier}": {
          "parameters": [
            { "name": "apnsId", "in": "path", "required": true, "schema": { "type": "string" } },
            { "name": "identifier", "in": "path", "required": true, "schema": { "type": "string" } },
            { "name": "device", "in": "query", "description": "The device token the push went to (default: the newest notification with this apns-id)", "schema": { "type": "string" } }
          ],
          "get": { "operationId": "getAttachment", "responses": {
            "200": { "description": "The attached file", "content": { "application/octet-stream": { "schema": { "type": "string", "format": "binary" } } } },
            "404": { "$ref": "#/components/responses/Problem" } } }
        },
        "/api/v1/events": {
          "get": {
            "operationId": "streamEvents",
            "description": "Server-Sent Events: every lifecycle event as `id: <n>`, `event: <type>`, `data: <Event JSON>`, with a comment line every heartbeat interval. `Last-Event-ID` (header, or the lastEventId parameter) resumes after that event from the event log (bounded by events.maxEvents / events.maxAgeHours); without it the stream starts with the next event. type, device and topic take comma-separated lists. Each event's data is described by the Event schema. Streams are capped: 429 too_many_event_streams when this client (IP address) has limits.maxEventStreamsPerClient open, 503 when the server has limits.maxEventStreams.",
            "parameters": [
              { "name": "type", "in": "query", "schema": { "type": "string" }, "description": "Comma-separated event types" },
              { "name": "device", "in": "query", "schema": { "type": "string" } },
              { "name": "topic", "in": "query", "schema": { "type": "string" } },
              { "name": "lastEventId", "in": "query", "schema": { "type": "string" } },
              { "name": "Last-Event-ID", "in": "header", "schema": { "type": "string" } }
            ],
            "responses": {
              "200": { "description": "An endless event stream", "content": { "text/event-stream": { "schema": { "type": "string" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "429": { "$ref": "#/components/responses/Problem" },
              "503": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/webhooks": {
          "get": { "operationId": "listWebhooks", "responses": {
            "200": { "description": "Subscriptions", "content": { "application/json": { "schema": { "type": "object", "required": ["webhooks"], "properties": { "webhooks": { "type": "array", "items": { "$ref": "#/components/schemas/Webhook" } } } } } } } } },
          "post": {
            "operationId": "createWebhook",
            "description": "Subscribes a URL to events (all when events is empty). The secret (whsec_…) is generated when not given; this answer is the only one that shows it, besides a rotation. The subscription receives events logged from now on.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/CreateWebhook" } } } },
            "responses": {
              "201": { "description": "Created", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Webhook" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/webhooks/{id}": {
          "parameters": [ { "$ref": "#/components/parameters/WebhookID" } ],
          "get": { "operationId": "getWebhook", "responses": {
            "200": { "description": "The subscription, with its circuit breaker state", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Webhook" } } } },
            "404": { "$ref": "#/components/responses/Problem" } } },
          "delete": { "operationId": "deleteWebhook", "responses": {
            "204": { "description": "Deleted, with its delivery log" },
            "404": { "$ref": "#/components/responses/Problem" } } }
        },
        "/api/v1/webhooks/{id}/deliveries": {
          "parameters": [ { "$ref": "#/components/parameters/WebhookID" } ],
          "get": {
            "operationId": "listWebhookDeliveries",
            "description": "The delivery log, newest first: every attempt with its status code, duration and error.",
            "parameters": [
              { "name": "status", "in": "query", "schema": { "type": "string", "enum": ["pending", "succeeded", "failed"] } },
              { "$ref": "#/components/parameters/Limit" },
              { "name": "before", "in": "query", "description": "Only deliveries with a smaller id (paging)", "schema": { "type": "integer", "minimum": 1, "maximum": 9223372036854775807 } }
            ],
            "responses": {
              "200": { "description": "Deliveries", "content": { "application/json": { "schema": { "type": "object", "required": ["deliveries"], "properties": { "deliveries": { "type": "array", "items": { "$ref": "#/components/schemas/WebhookDelivery" } } } } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "404": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/webhooks/{id}/deliveries/{deliveryId}/replay": {
          "parameters": [ { "$ref": "#/components/parameters/WebhookID" }, { "name": "deliveryId", "in": "path", "required": true, "schema": { "type": "string" } } ],
          "post": { "operationId": "replayWebhookDelivery", "description": "Sends the delivery's message again, as a new delivery with the same webhook-id.", "responses": {
            "202": { "description": "Queued", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/WebhookDelivery" } } } },
            "404": { "$ref": "#/components/responses/Problem" } } }
        },
        "/api/v1/webhooks/{id}/rotate-secret": {
          "parameters": [ { "$ref": "#/components/parameters/WebhookID" } ],
          "post": {
            "operationId": "rotateWebhookSecret",
            "description": "Gives the subscription a new signing secret (the body's, else a generated one) and shows it, once. Every attempt from now on is signed with it.",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "type": "object", "additionalProperties": false, "properties": {
              "secret": { "type": "string", "pattern": "^whsec_[A-Za-z0-9+/=]+$" } } } } } },
            "responses": {
              "200": { "description": "The subscription with its new secret", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Webhook" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "404": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/webhooks/{id}/test": {
          "parameters": [ { "$ref": "#/components/parameters/WebhookID" } ],
          "post": { "operationId": "sendWebhookTest", "description": "Queues a webhook.test message for this subscription only.", "responses": {
            "202": { "description": "Queued", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/WebhookDelivery" } } } },
            "404": { "$ref": "#/components/responses/Problem" } } }
        },
        "/api/v1/pushes": {
          "get": {
            "operationId": "listPushes",
            "description": "Every push the provider endpoint received (accepted or rejected), newest first, from memory.",
            "parameters": [ { "name": "limit", "in": "query", "schema": { "type": "integer", "minimum": 1, "maximum": 10000 } },
              { "name": "device", "in": "query", "description": "Device token or a prefix of it (case-insensitive)", "schema": { "type": "string" } },
              { "name": "topic", "in": "query", "schema": { "type": "string" } },
              { "name": "pushType", "in": "query", "description": "Several comma-separated (any of them)", "style": "form", "explode": false, "schema": { "type": "array", "items": { "$ref": "#/components/schemas/PushTypeName" } } },
              { "name": "status", "in": "query", "description": "accepted, rejected, or an HTTP status (0: dropped by a fault is neither); several comma-separated (any of them)", "style": "form", "explode": false, "schema": { "type": "array", "items": { "type": "string", "pattern": "^(accepted|rejected|[1-5][0-9][0-9])$" } } },
              { "name": "reason", "in": "query", "description": "The APNs reason of a rejection; several comma-separated (any of them)", "style": "form", "explode": false, "schema": { "type": "array", "items": { "type": "string", "enum": ["BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic", "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken", "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadPayload", "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken", "BadEnvironmentKeyInToken", "BadPath", "MethodNotAllowed", "ExpiredToken", "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown"] } } },
              { "$ref": "#/components/parameters/SinceFilter" }, { "$ref": "#/components/parameters/UntilFilter" },
              { "name": "q", "in": "query", "description": "Free text, case-insensitive: an apns-id or device-token prefix, or text in the topic", "schema": { "type": "string" } } ],
            "responses": {
              "200": { "description": "Push log", "content": { "application/json": { "schema": { "type": "object", "required": ["accepted", "rejected", "pushes"], "properties": {
                "accepted": { "type": "integer" }, "rejected": { "type": "integer" }, "pushes": { "type": "array", "items": { "$ref": "#/components/schemas/PushLogEntry" } } } } } } },
              "400": { "$ref": "#/components/responses/Problem" }
            }
          }
        }
      },
      "webhooks": {
        "sandboxEvent": {
          "post": {
            "description": "What a subscribed endpoint receives, signed per Standard Webhooks: webhook-signature = v1, + base64(HMAC-SHA256(base64-decoded secret after whsec_, webhook-id + . + webhook-timestamp + . + body)). A 2xx within webhooks.timeoutMilliseconds is success; anything else is retried on the backoff schedule.",
            "parameters": [
              { "name": "webhook-id", "in": "header", "required": true, "schema": { "type": "string" } },
              { "name": "webhook-timestamp", "in": "header", "required": true, "schema": { "type": "string" } },
              { "name": "webhook-signature", "in": "header", "required": true, "schema": { "type": "string" } }
            ],
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Event" } } } },
            "responses": { "2XX": { "description": "Delivered" } }
          }
        }
      },
      "components": {
        "securitySchemes": {
          "adminToken": { "type": "http", "scheme": "bearer", "description": "The admin token (admin.token, APNS_SANDBOX_ADMIN_TOKEN, admin.tokenFile, or <dataDirectory>/admin-token)" },
          "adminBasic": { "type": "http", "scheme": "basic", "description": "admin.username (default admin) and the admin token as the password" }
        },
        "parameters": {
          "Limit": { "name": "limit", "in": "query", "schema": { "type": "integer", "minimum": 1, "maximum": 1000 } },
          "Offset": { "name": "offset", "in": "query", "schema": { "type": "integer", "minimum": 0, "maximum": 2147483647 } },
          "DeviceToken": { "name": "token", "in": "path", "required": true, "schema": { "type": "string" } },
          "BundleID": { "name": "bundleId", "in": "path", "required": true, "schema": { "type": "string" } },
          "DeviceFilter": { "name": "device", "in": "query", "schema": { "type": "string" } },
          "TopicFilter": { "name": "topic", "in": "query", "schema": { "type": "string" } },
          "BundleFilter": { "name": "bundleId", "in": "query", "schema": { "type": "string" } },
          "StatusFilter": { "name": "status", "in": "query", "description": "One status or several, comma-separated (any of them)", "style": "form", "explode": false, "schema": { "type": "array", "items": { "$ref": "#/components/schemas/NotificationStatus" } } },
          "PushTypeFilter": { "name": "pushType", "in": "query", "description": "The push type as recorded (apns-push-type); several comma-separated (any of them)", "style": "form", "explode": false, "schema": { "type": "array", "items": { "$ref": "#/components/schemas/PushTypeName" } } },
          "OutcomeFilter": { "name": "outcome", "in": "query", "description": "The extension outcome; several comma-separated (any of them)", "style": "form", "explode": false, "schema": { "type": "array", "items": { "type": "string", "enum": ["processed", "best-attempt", "original-timeout", "original-error", "original-crash", "original-no-alert", "direct"] } } },
          "UntilFilter": { "name": "until", "in": "query", "description": "Received strictly before, in milliseconds since the epoch (the paging cursor back in time: pass the receivedAt of the last record of a page)", "schema": { "type": "integer", "minimum": 0, "maximum": 9223372036854775807 } },
          "SearchFilter": { "name": "q", "in": "query", "description": "Free text, case-insensitive: an apns-id or device-token prefix, or text in the topic, the bundle id, the displayed title, subtitle or body, or the payload", "schema": { "type": "string" } },
          "WebhookID": { "name": "id", "in": "path", "required": true, "schema": { "type": "string" } },
          "SinceFilter": { "name": "since", "in": "query", "description": "Received at or after, in milliseconds since the epoch", "schema": { "type": "integer", "minimum": 0, "maximum": 9223372036854775807 } },
          "AfterFilter": { "name": "after", "in": "query", "description": "Only notifications created after this cursor (the cursor of an earlier listing or wait answer)", "schema": { "type": "integer", "minimum": 0, "maximum": 9223372036854775807 } }
        },
        "responses": {
          "Problem": { "description": "Error", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
        },
        "schemas": {
          "EventType": { "type": "string", "enum": ["push.accepted", "push.rejected", "notification.stored", "notification.displayed", "notification.delivered-silent", "notification.expired", "notification.discarded", "device.updated", "fault.applied", "clock.changed", "webhook.test", "sandbox.reset"] },
          "Event": {
            "type": "object",
            "description": "What SSE data lines and webhook bodies carry (the Standard Webhooks payload shape). id is evt_ and the event's position in the log (the SSE id without the prefix).",
            "required": ["id", "type", "timestamp", "data"],
            "properties": {
              "id": { "type": "string", "examples": ["evt_42"] },
              "type": { "$ref": "#/components/schemas/EventType" },
              "timestamp": { "type": "string", "format": "date-time" },
              "data": { "oneOf": [
                { "$ref": "#/components/schemas/NotificationEventData" }, { "$ref": "#/components/schemas/PushRejectedEventData" },
                { "$ref": "#/components/schemas/DeviceUpdatedEventData" }, { "$ref": "#/components/schemas/WebhookTestEventData" },
                { "$ref": "#/components/schemas/FaultAppliedEventData" },
                { "$ref": "#/components/schemas/ClockChangedEventData" },
                { "$ref": "#/components/schemas/SandboxResetEventData" } ] }
            }
          },
          "NotificationEventData": {
            "type": "object",
            "description": "push.accepted (with payload), notification.stored / expired / discarded (with reason), notification.displayed (with outcome and displayed), notification.delivered-silent. timings on final events.",
            "required": ["apnsId", "deviceToken", "bundleId", "topic", "priority", "environment", "receivedAt", "status", "href"],
            "properties": {
              "apnsId": { "type": "string" }, "uniqueId": { "type": "string" }, "deviceToken": { "type": "string" },
              "bundleId": { "type": "string" }, "topic": { "type": "string" }, "pushType": { "type": "string" },
              "priority": { "type": "integer" }, "environment": { "type": "string", "enum": ["development", "production"] },
              "collapseId": { "type": "string" }, "expiration": { "type": "integer" }, "receivedAt": { "type": "integer" },
              "status": { "$ref": "#/components/schemas/NotificationStatus" },
              "payload": { "type": "object", "description": "push.accepted only: the payload as sent" },
              "outcome": { "type": "string", "enum": ["processed", "best-attempt", "original-timeout", "original-error", "original-crash", "original-no-alert", "direct"] },
              "displayed": { "type": "object", "description": "DisplayedContent; attachments carry identifier, type, size and href" },
              "reason": { "type": "string" },
              "timings": { "type": "object", "required": ["at", "sinceReceivedMs"], "properties": {
                "at": { "type": "integer" }, "sinceReceivedMs": { "type": "integer" }, "extensionMs": { "type": "number" } } },
              "href": { "type": "string", "description": "The record in the REST API" }
            }
          },
          "PushRejectedEventData": {
            "type": "object",
            "required": ["apnsId", "priority", "environment", "status", "reason", "connectionId", "receivedAt"],
            "properties": {
              "apnsId": { "type": "string" }, "deviceToken": { "type": "string" }, "topic": { "type": "string" },
              "pushType": { "type": "string" }, "priority": { "type": "integer" }, "environment": { "type": "string" },
              "status": { "type": "integer", "description": "The HTTP status the provider got" },
              "reason": { "type": "string", "description": "APNs' reason string" },
              "timestamp": { "type": "integer", "description": "410 only: when the token stopped being valid (ms)" },
              "connectionId": { "type": "integer" }, "receivedAt": { "type": "integer" }
            }
          },
          "DeviceUpdatedEventData": {
            "type": "object",
            "required": ["change", "token"],
            "properties": {
              "change": { "type": "string", "enum": ["created", "auto-registered", "updated", "deleted"] },
              "token": { "type": "string" }, "environment": { "type": "string" }, "locale": { "type": "string" },
              "online": { "type": "boolean" }, "autoRegistered": { "type": "boolean" },
              "apps": { "type": "array", "items": { "type": "object", "required": ["bundleId", "installedAt"], "properties": {
                "bundleId": { "type": "string" }, "installedAt": { "type": "integer" }, "uninstalledAt": { "type": "integer" }, "badge": { "type": "integer" } } } }
            }
          },
          "WebhookTestEventData": { "type": "object", "required": ["subscriptionId", "message"], "properties": { "subscriptionId": { "type": "string" }, "message": { "type": "string" } } },
          "CreateWebhook": {
            "type": "object",
            "additionalProperties": false,
            "required": ["url"],
            "properties": {
              "url": { "type": "string", "description": "http:// or https:// (https needs a certificate the system trusts)" },
              "events": { "type": "array", "items": { "$ref": "#/components/schemas/EventType" } },
              "devices": { "type": "array", "items": { "type": "string" } },
              "topics": { "type": "array", "items": { "type": "string" } },
              "secret": { "type": "string", "pattern": "^whsec_[A-Za-z0-9+/=]+$" },
              "description": { "type": "string" },
              "maxConcurrentDeliveries": { "type": "integer", "minimum": 1, "maximum": 256 }
            }
          },
          "Webhook": {
            "type": "object",
            "required": ["id", "url", "events", "devices", "topics", "createdAt", "source"],
            "properties": {
              "id": { "type": "string" }, "url": { "type": "string" },
              "events": { "type": "array", "items": { "type": "string" } },
              "devices": { "type": "array", "items": { "type": "string" } },
              "topics": { "type": "array", "items": { "type": "string" } },
              "secret": { "type": "string", "description": "Only in the answers that create the subscription or rotate its secret" },
              "description": { "type": "string" },
              "maxConcurrentDeliveries": { "type": "integer" }, "createdAt": { "type": "integer" },
              "source": { "type": "string", "enum": ["api", "config"] },
              "circuit": { "type": "string", "enum": ["closed", "open", "half-open"] },
              "consecutiveFailures": { "type": "integer" }, "inFlight": { "type": "integer" }
            }
          },
          "WebhookAttempt": {
            "type": "object",
            "required": ["at", "durationMs"],
            "properties": { "at": { "type": "integer" }, "statusCode": { "type": "integer" }, "durationMs": { "type": "number" }, "error": { "type": "string" } }
          },
          "WebhookDelivery": {
            "type": "object",
            "required": ["id", "subscriptionId", "messageId", "eventType", "status", "attemptCount", "attempts", "createdAt", "updatedAt"],
            "properties": {
              "id": { "type": "integer" }, "subscriptionId": { "type": "string" }, "eventId": { "type": "string" },
              "messageId": { "type": "string", "description": "webhook-id: the same on every attempt and replay" },
              "eventType": { "type": "string" }, "status": { "type": "string", "enum": ["pending", "succeeded", "failed"] },
              "attemptCount": { "type": "integer" }, "attempts": { "type": "array", "items": { "$ref": "#/components/schemas/WebhookAttempt" } },
              "nextAttemptAt": { "type": "integer" }, "createdAt": { "type": "integer" }, "updatedAt": { "type": "integer" },
              "payload": { "$ref": "#/components/schemas/Event" }
            }
          },
          "Problem": { "type": "object", "required": ["error"], "properties": { "error": { "type": "object", "required": ["code", "message"], "properties": { "code": { "type": "string" }, "message": { "type": "string" } } } } },
          "Status": { "type": "object", "required": ["status"], "properties": { "status": { "type": "string" } } },
          "Readiness": { "type": "object", "required": ["status"], "properties": { "status": { "type": "string", "enum": ["draining", "not-ready"] }, "reason": { "type": "string", "description": "Why the server cannot serve, e.g. store: database or disk is full" } } },
          "BundleIDString": { "type": "string", "pattern": "^[A-Za-z0-9.-]{1,255}$", "description": "A bundle ID or topic: 1–255 characters of A–Z a–z 0–9 . -" },
          "DeviceTokenString": { "type": "string", "pattern": "^([0-9A-Fa-f]{2}){16,200}$", "description": "32–400 hex digits, an even number (stored lower-case)" },
          "LocaleString": { "type": "string", "pattern": "^[A-Za-z0-9_-]{1,35}$", "description": "Like en_US or fr" },
          "TeamIDString": { "type": "string", "minLength": 1, "maxLength": 64 },
          "KeychainKeys": { "type": "object", "propertyNames": { "$ref": "#/components/schemas/BundleIDString" },
            "additionalProperties": { "type": "string", "pattern": "^([A-Za-z0-9+/]{22}==|[A-Za-z0-9+/]{32}|[A-Za-z0-9+/]{43}=)$", "description": "A base64 AES key: 16, 24 or 32 bytes" },
            "description": "bundleId → base64 AES key (16, 24 or 32 bytes) for the device keychain" },
          "PushLogEntry": {
            "type": "object",
            "required": ["apnsId", "deviceToken", "priority", "environment", "status", "authentication", "connectionId", "receivedAt", "payloadBytes"],
            "properties": {
              "fault": { "$ref": "#/components/schemas/AppliedFault" },
              "apnsId": { "type": "string" }, "uniqueId": { "type": "string" }, "deviceToken": { "type": "string" },
              "topic": { "type": "string" }, "bundleId": { "type": "string" }, "pushType": { "type": "string" },
              "priority": { "type": "integer" }, "environment": { "type": "string", "enum": ["development", "production"] },
              "status": { "type": "integer", "description": "The HTTP status the provider endpoint answered; 0 when a fault rule dropped the push without an answer (see fault)" },
              "reason": { "type": "string", "description": "The APNs reason of a rejected push" },
              "cause": { "type": "string", "description": "Why a provider token or client certificate was refused, in a sentence (e.g. iat is a string that is not a plain integer, signature does not verify with key ABC123DEFG, issued 3 h ago (max 60 min)); APNs' answer says only the reason. Absent when accepted or for other refusals" },
              "authentication": { "type": "string", "description": "token:TEAM/KEY, certificate:BUNDLE or none" },
              "connectionId": { "type": "integer" }, "receivedAt": { "type": "integer" }, "payloadBytes": { "type": "integer" }
            }
          },
          "PushTypeName": { "type": "string", "enum": ["alert", "background", "complication", "controls", "fileprovider", "liveactivity", "location", "mdm", "pushtotalk", "voip", "widgets"] },
          "NotificationStatus": { "type": "string", "enum": ["accepted", "stored", "delivering", "extension-running", "displayed", "delivered-silent", "expired", "discarded"] },
          "Device": {
            "type": "object",
            "required": ["token", "environment", "locale", "online", "apps", "keychain", "createdAt", "autoRegistered"],
            "properties": {
              "token": { "type": "string" },
              "environment": { "type": "string", "enum": ["development", "production"] },
              "locale": { "type": "string" },
              "online": { "type": "boolean" },
              "apps": { "type": "array", "items": { "type": "object", "required": ["bundleId", "installedAt"], "properties": {
                "bundleId": { "type": "string" }, "installedAt": { "type": "integer" }, "uninstalledAt": { "type": "integer" }, "badge": { "type": "integer" } } } },
              "keychain": { "type": "array", "items": { "type": "string" }, "description": "Bundle IDs with a key in the device keychain" },
              "createdAt": { "type": "integer" },
              "autoRegistered": { "type": "boolean" }
            }
          },
          "CreateDevice": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "token": { "$ref": "#/components/schemas/DeviceTokenString", "description": "Hex; generated (32 random bytes) when absent" },
              "environment": { "type": "string", "enum": ["development", "production"], "default": "development" },
              "locale": { "$ref": "#/components/schemas/LocaleString", "default": "en_US" },
              "online": { "type": "boolean", "default": true },
              "apps": { "type": "array", "items": { "$ref": "#/components/schemas/BundleIDString" } },
              "keys": { "$ref": "#/components/schemas/KeychainKeys" }
            }
          },
          "UpdateDevice": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "online": { "type": "boolean" },
              "locale": { "$ref": "#/components/schemas/LocaleString" },
              "installApps": { "type": "array", "items": { "$ref": "#/components/schemas/BundleIDString" } },
              "uninstallApps": { "type": "array", "items": { "$ref": "#/components/schemas/BundleIDString" }, "description": "Installed apps only (422 not_installed otherwise)" },
              "keys": { "$ref": "#/components/schemas/KeychainKeys" },
              "rotateToken": { "type": "boolean" }
            }
          },
          "App": {
            "type": "object",
            "required": ["bundleId", "teamId", "strings"],
            "properties": {
              "bundleId": { "type": "string" },
              "teamId": { "type": "string" },
              "strings": { "type": "object", "additionalProperties": { "type": "object", "additionalProperties": { "type": "string" } } },
              "serviceExtension": {}
            }
          },
          "CreateApp": {
            "type": "object",
            "additionalProperties": false,
            "required": ["bundleId", "teamId"],
            "properties": {
              "bundleId": { "$ref": "#/components/schemas/BundleIDString" },
              "teamId": { "$ref": "#/components/schemas/TeamIDString" },
              "strings": { "type": "object", "additionalProperties": { "type": "object", "additionalProperties": { "type": "string" } } },
              "serviceExtension": {}
            }
          },
          "AppRequest": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "bundleId": { "type": "string", "description": "Ignored: the path names the app" },
              "teamId": { "$ref": "#/components/schemas/TeamIDString" },
              "strings": { "type": "object", "additionalProperties": { "type": "object", "additionalProperties": { "type": "string" } } },
              "serviceExtension": {}
            }
          },
          "DisplayedContent": {
            "type": "object",
            "required": ["attachments"],
            "properties": {
              "title": { "type": "string" }, "subtitle": { "type": "string" }, "body": { "type": "string" },
              "badge": { "type": "integer" }, "sound": { "type": "string" }, "threadId": { "type": "string" },
              "category": { "type": "string" }, "interruptionLevel": { "type": "string" }, "targetContentId": { "type": "string" },
              "relevanceScore": { "type": "number" }, "userInfo": {},
              "attachments": { "type": "array", "items": { "type": "object", "required": ["identifier", "type", "size", "href"], "properties": {
                "identifier": { "type": "string" }, "type": { "type": "string" }, "size": { "type": "integer" },
                "href": { "type": "string", "description": "Where the file is served: GET /api/v1/notifications/{apnsId}/attachments/{identifier}?device=…" } } } }
            }
          },
          "TimelineEntry": {
            "type": "object",
            "required": ["step", "at", "monotonic"],
            "properties": { "step": { "type": "string" }, "at": { "type": "integer" }, "monotonic": { "type": "integer" }, "detail": { "type": "string" } }
          },
          "Notification": {
            "type": "object",
            "required": ["apnsId", "deviceToken", "bundleId", "topic", "priority", "environment", "headers", "authentication", "connectionId", "receivedAt", "status", "final", "timeline"],
            "properties": {
              "faults": { "type": "array", "items": { "$ref": "#/components/schemas/AppliedFault" } },
              "apnsId": { "type": "string" }, "uniqueId": { "type": "string" }, "deviceToken": { "type": "string" },
              "bundleId": { "type": "string" }, "topic": { "type": "string" }, "pushType": { "type": "string" },
              "priority": { "type": "integer" }, "expiration": { "type": "integer" }, "collapseId": { "type": "string" },
              "environment": { "type": "string", "enum": ["development", "production"] },
              "headers": { "type": "array", "description": "The request's headers as received, except `authorization`, whose provider token is never stored (`bearer <redacted>`; see `jwt`).", "items": { "type": "object", "required": ["name", "value"], "properties": { "name": { "type": "string" }, "value": { "type": "string" } } } },
              "payload": {},
              "authentication": { "type": "string" },
              "jwt": { "type": "object", "properties": { "teamId": { "type": "string" }, "keyId": { "type": "string" }, "issuedAt": { "type": "integer" } } },
              "connectionId": { "type": "integer" }, "receivedAt": { "type": "integer" },
              "status": { "$ref": "#/components/schemas/NotificationStatus" },
              "final": { "type": "boolean" },
              "outcome": { "type": "string", "enum": ["processed", "best-attempt", "original-timeout", "original-error", "original-crash", "original-no-alert", "direct"] },
              "displayed": { "$ref": "#/components/schemas/DisplayedContent" },
              "timeline": { "type": "array", "items": { "$ref": "#/components/schemas/TimelineEntry" } }
            }
          },
          "NotificationList": {
            "type": "object",
            "required": ["total", "limit", "offset", "cursor", "notifications"],
            "properties": { "total": { "type": "integer" }, "limit": { "type": "integer" }, "offset": { "type": "integer" },
              "cursor": { "type": "integer", "description": "Pass as after= to see only the notifications created since this answer" },
              "notifications": { "type": "array", "items": { "$ref": "#/components/schemas/Notification" } } }
          },
          "NotificationCenter": {
            "type": "object",
            "required": ["notifications", "total", "badges"],
            "properties": {
              "total": { "type": "integer", "description": "Notifications listed, those a limit left out included" },
              "notifications": { "type": "array", "description": "Newest first", "items": { "type": "object", "required": ["apnsId", "bundleId", "identifier", "displayedAt", "content"], "properties": {
                "apnsId": { "type": "string" }, "bundleId": { "type": "string" }, "identifier": { "type": "string" },
                "displayedAt": { "type": "integer" }, "content": { "$ref": "#/components/schemas/DisplayedContent" } } } },
              "badges": { "type": "object", "additionalProperties": { "type": "integer" } }
            }
          }
        }
      }
    }
    """#
}
