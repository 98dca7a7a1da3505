// APNs Sandbox — the OpenAPI description of `POST /api/v1/reset` and `GET|POST /api/v1/snapshot`.

extension OpenAPIDocument {
    /// Reset and snapshots (ResetRoutes, SnapshotRoutes; docs/reset-and-snapshots.md).
    static let steering: String = #"""
    {
      "paths": {
        "/api/v1/reset": {
          "post": {
            "operationId": "resetSandbox",
            "description": "Back to what the configuration seeds, and answers when done (call it in a test's setUp). No body or {} resets everything: notifications (and their attachment files), the event log (event ids go on growing; a sandbox.reset event is logged), devices and apps created through the API or by pushes (removed; those of the configuration return to their configured state), the push log, queued deliveries, and what faults or a virtual clock hold. {\"teamId\"}, {\"bundleId\"} or {\"deviceToken\"} reset only that team's apps, that app or that device (docs/reset-and-snapshots.md). Webhook subscriptions are kept.",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ResetRequest" } } } },
            "responses": {
              "200": { "description": "Reset", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ResetAnswer" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        },
        "/api/v1/snapshot": {
          "get": {
            "operationId": "getSnapshot",
            "description": "The simulated world as one document: devices, apps (with their service extensions and strings), the provider keys' public parts, webhook subscriptions (never their secrets), optionally notifications with their records, and one section per part that takes part in snapshots (faults, clock). POST it to this server or another to restore it.",
            "parameters": [
              { "name": "notifications", "in": "query", "description": "true: include every notification with its record", "schema": { "type": "string", "enum": ["true", "false"] } },
              { "name": "secrets", "in": "query", "description": "true: include the devices' keychain keys (keychainKeys). Webhook secrets are never included.", "schema": { "type": "string", "enum": ["true", "false"] } }
            ],
            "responses": {
              "200": { "description": "The snapshot document", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Snapshot" } } } },
              "400": { "$ref": "#/components/responses/Problem" }
            }
          },
          "post": {
            "operationId": "restoreSnapshot",
            "description": "Replaces the current state with the document: validated whole first (a bad document changes nothing; the error names the path of the bad field, e.g. devices[2].token; unknown fields are errors), then like a reset of everything followed by loading the document's devices, apps, notifications and webhook subscriptions. Provider keys are compared with the configuration and reported, never registered. The body is bounded by limits.maxBodyBytes.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Snapshot" } } } },
            "responses": {
              "200": { "description": "Restored", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/RestoreAnswer" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "403": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          }
        }
      },
      "components": {
        "schemas": {
          "ResetRequest": {
            "type": "object",
            "additionalProperties": false,
            "maxProperties": 1,
            "description": "At most one scope; none resets everything.",
            "properties": {
              "teamId": { "$ref": "#/components/schemas/TeamIDString" },
              "bundleId": { "$ref": "#/components/schemas/BundleIDString" },
              "deviceToken": { "$ref": "#/components/schemas/DeviceTokenString" }
            }
          },
          "ResetAnswer": {
            "type": "object",
            "required": ["reset"],
            "properties": { "reset": {
              "type": "object",
              "required": ["scope", "notificationsRemoved", "eventsRemoved", "devicesRemoved", "devicesRestored", "appsRemoved", "appsRestored", "pushesForgotten", "participants", "durationMs"],
              "properties": {
                "scope": { "type": "string", "enum": ["all", "team", "app", "device"] },
                "teamId": { "type": "string" }, "bundleId": { "type": "string" }, "deviceToken": { "type": "string" },
                "notificationsRemoved": { "type": "integer" }, "eventsRemoved": { "type": "integer" },
                "devicesRemoved": { "type": "integer" }, "devicesRestored": { "type": "integer", "description": "Devices written back to their configured state" },
                "appsRemoved": { "type": "integer" }, "appsRestored": { "type": "integer" },
                "pushesForgotten": { "type": "integer", "description": "Pushes that were still on their way (stored, batched, committing) and were dropped" },
                "participants": { "type": "array", "items": { "type": "string" }, "description": "The other parts that were reset (faults, clock)" },
                "eventId": { "type": "string", "description": "The sandbox.reset event" },
                "durationMs": { "type": "number" }
              } } }
          },
          "RestoreAnswer": {
            "type": "object",
            "required": ["restored"],
            "properties": { "restored": {
              "type": "object",
              "required": ["devices", "apps", "notifications", "webhooks", "webhooksWithNewSecret", "providerKeys", "sections", "notificationsRemoved", "durationMs"],
              "properties": {
                "devices": { "type": "integer" }, "apps": { "type": "integer" }, "notifications": { "type": "integer" }, "webhooks": { "type": "integer" },
                "webhooksWithNewSecret": { "type": "array", "items": { "type": "string" }, "description": "Subscriptions that got a generated secret (the document gave none and the server had none): POST …/rotate-secret sets a known one" },
                "providerKeys": { "type": "object", "required": ["configured", "notConfigured", "different"], "properties": {
                  "configured": { "type": "array", "items": { "type": "string" }, "description": "Key IDs the configuration has, the same" },
                  "notConfigured": { "type": "array", "items": { "type": "string" }, "description": "Not registered: tokens they sign are refused until the key is added to teams[].keys" },
                  "different": { "type": "array", "items": { "type": "string" }, "description": "The configuration has another key (team, public key, scope or environment) under this ID; it stays" } } },
                "sections": { "type": "array", "items": { "type": "string" }, "description": "Parts restored from their section (the others were reset)" },
                "notificationsRemoved": { "type": "integer" },
                "eventId": { "type": "string" }, "durationMs": { "type": "number" }
              } } }
          },
          "Snapshot": {
            "type": "object",
            "required": ["version"],
            "description": "Besides these keys, one per part that takes part in snapshots (faults, clock): its own section. Any other key is refused.",
            "properties": {
              "version": { "type": "integer", "enum": [1] },
              "takenAt": { "type": "integer", "minimum": 0, "description": "Wall ms when it was taken (informational)" },
              "devices": { "type": "array", "items": { "$ref": "#/components/schemas/SnapshotDevice" } },
              "apps": { "type": "array", "items": { "$ref": "#/components/schemas/SnapshotApp" } },
              "providerKeys": { "type": "array", "items": { "$ref": "#/components/schemas/SnapshotProviderKey" } },
              "webhooks": { "type": "array", "items": { "$ref": "#/components/schemas/SnapshotWebhook" } },
              "notifications": { "type": "array", "description": "Newest first", "items": { "$ref": "#/components/schemas/SnapshotNotification" } }
            }
          },
          "SnapshotBundleID": { "type": "string", "minLength": 1, "maxLength": 255, "description": "A bundle ID as a push's topic may name it: 1–255 bytes without white space or control characters" },
          "SnapshotDevice": {
            "type": "object",
            "additionalProperties": false,
            "required": ["token"],
            "properties": {
              "token": { "$ref": "#/components/schemas/DeviceTokenString" },
              "environment": { "type": "string", "enum": ["development", "production"], "default": "development" },
              "locale": { "$ref": "#/components/schemas/LocaleString" },
              "online": { "type": "boolean", "default": true },
              "apps": { "type": "array", "items": { "type": "object", "additionalProperties": false, "required": ["bundleId"], "properties": {
                "bundleId": { "$ref": "#/components/schemas/SnapshotBundleID" }, "installedAt": { "type": "integer" }, "uninstalledAt": { "type": "integer" },
                "badge": { "type": "integer", "format": "int64" } } } },
              "keychainKeys": { "$ref": "#/components/schemas/KeychainKeys", "description": "Only with ?secrets=true" },
              "createdAt": { "type": "integer" },
              "autoRegistered": { "type": "boolean" }
            }
          },
          "SnapshotApp": {
            "type": "object",
            "additionalProperties": false,
            "required": ["bundleId", "teamId"],
            "properties": {
              "bundleId": { "$ref": "#/components/schemas/SnapshotBundleID" },
              "teamId": { "$ref": "#/components/schemas/TeamIDString" },
              "strings": { "type": "object", "additionalProperties": { "type": "object", "additionalProperties": { "type": "string" } } },
              "serviceExtension": { "description": "As for PATCH /api/v1/apps/{bundleId} (the same exec policy applies: 403 otherwise)" }
            }
          },
          "SnapshotProviderKey": {
            "type": "object",
            "additionalProperties": false,
            "required": ["teamId", "keyId", "publicKey"],
            "properties": {
              "teamId": { "type": "string" }, "keyId": { "type": "string", "minLength": 1 },
              "publicKey": { "type": "string", "description": "ES256 (P-256) public key, SubjectPublicKeyInfo PEM" },
              "scope": { "type": "string", "enum": ["team", "topics"] },
              "topics": { "type": "array", "items": { "type": "string" } },
              "environment": { "type": "string", "enum": ["development", "production", "both"] }
            }
          },
          "SnapshotWebhook": {
            "type": "object",
            "additionalProperties": false,
            "required": ["id", "url"],
            "properties": {
              "id": { "type": "string", "minLength": 1, "maxLength": 128 },
              "url": { "type": "string" },
              "events": { "type": "array", "items": { "$ref": "#/components/schemas/EventType" } },
              "devices": { "type": "array", "items": { "type": "string" } },
              "topics": { "type": "array", "items": { "type": "string" } },
              "description": { "type": "string" },
              "maxConcurrentDeliveries": { "type": "integer", "minimum": 1, "maximum": 256 },
              "createdAt": { "type": "integer" },
              "source": { "type": "string", "enum": ["api", "config"] },
              "secret": { "type": "string", "pattern": "^whsec_[A-Za-z0-9+/=]+$", "description": "Restore only (never written): the signing secret to use" }
            }
          },
          "SnapshotNotification": {
            "type": "object",
            "additionalProperties": false,
            "description": "A notification as GET /api/v1/notifications/{apnsId} shows it, without final and the attachments' href, with each attachment's path under <dataDirectory>/attachments/ (the files are not in the document).",
            "required": ["apnsId", "deviceToken", "bundleId", "topic", "environment", "payload", "receivedAt", "status"],
            "properties": {
              "apnsId": { "type": "string", "minLength": 1, "maxLength": 64 }, "uniqueId": { "type": "string" },
              "deviceToken": { "$ref": "#/components/schemas/DeviceTokenString" },
              "bundleId": { "$ref": "#/components/schemas/SnapshotBundleID" }, "topic": { "type": "string", "minLength": 1 },
              "pushType": { "type": "string", "enum": ["alert", "background", "complication", "controls", "fileprovider", "liveactivity", "location", "mdm", "pushtotalk", "voip", "widgets"] },
              "priority": { "type": "integer", "enum": [1, 5, 10] }, "expiration": { "type": "integer" }, "collapseId": { "type": "string" },
              "environment": { "type": "string", "enum": ["development", "production"] },
              "headers": { "type": "array", "items": { "type": "object", "additionalProperties": false, "required": ["name", "value"], "properties": { "name": { "type": "string" }, "value": { "type": "string" } } } },
              "payload": { "type": "object" },
              "authentication": { "type": "string" },
              "jwt": { "type": "object", "additionalProperties": false, "properties": { "teamId": { "type": "string" }, "keyId": { "type": "string" }, "issuedAt": { "type": "integer" } } },
              "connectionId": { "type": "integer", "minimum": 0 }, "receivedAt": { "type": "integer" },
              "status": { "$ref": "#/components/schemas/NotificationStatus" },
              "outcome": { "type": "string", "enum": ["processed", "best-attempt", "original-timeout", "original-error", "original-crash", "original-no-alert", "direct"] },
              "displayed": { "type": "object", "additionalProperties": false, "properties": {
                "title": { "type": "string" }, "subtitle": { "type": "string" }, "body": { "type": "string" },
                "badge": { "type": "integer", "format": "int64" }, "sound": { "type": "string" }, "threadId": { "type": "string" },
                "category": { "type": "string" }, "interruptionLevel": { "type": "string" }, "targetContentId": { "type": "string" },
                "relevanceScore": { "type": "number" }, "userInfo": { "type": "object" },
                "attachments": { "type": "array", "items": { "type": "object", "additionalProperties": false, "required": ["identifier", "type", "size", "path"], "properties": {
                  "identifier": { "type": "string" }, "type": { "type": "string" }, "size": { "type": "integer", "format": "int64", "minimum": 0 },
                  "path": { "type": "string", "description": "Relative to <dataDirectory>/attachments/ (no .., not absolute)" } } } } } },
              "timeline": { "type": "array", "items": { "type": "object", "additionalProperties": false, "required": ["step", "at"], "properties": {
                "step": { "type": "string" }, "at": { "type": "integer" }, "monotonic": { "type": "integer", "minimum": 0 }, "detail": { "type": "string" } } } }
            }
          },
          "SandboxResetEventData": {
            "type": "object",
            "required": ["cause", "scope", "notificationsRemoved", "eventsRemoved"],
            "description": "sandbox.reset: the sandbox was reset (cause reset, POST /api/v1/reset) or a snapshot restored (cause restore). What a consumer shows of the scope may be gone.",
            "properties": {
              "cause": { "type": "string", "enum": ["reset", "restore"] },
              "scope": { "type": "string", "enum": ["all", "team", "app", "device"] },
              "teamId": { "type": "string" }, "bundleId": { "type": "string" }, "deviceToken": { "type": "string" },
              "notificationsRemoved": { "type": "integer" }, "eventsRemoved": { "type": "integer" }
            }
          }
        }
      }
    }
    """#
}
