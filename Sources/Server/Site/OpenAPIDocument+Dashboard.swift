// APNs Sandbox — the OpenAPI description of the dashboard's helpers: `/api/v1/provider-tokens` (ProviderTokenRoutes),
// `/api/v1/provider-tokens/validate` (ProviderTokenValidationRoutes) and `/api/v1/pushes/validate` (PushValidationRoutes).

extension OpenAPIDocument {
    static let dashboard: String = #"""
    {
      "paths": {
        "/api/v1/provider-tokens": {
          "get": {
            "operationId": "listProviderTokenKeys",
            "description": "Every configured signing key (teams[].keys[]) and whether the sandbox can sign with it (it has a privateKeyFile).",
            "responses": {
              "200": { "description": "The keys", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ProviderTokenKeys" } } } }
            }
          },
          "post": {
            "operationId": "mintProviderToken",
            "description": "A provider token (ES256 JWT) signed with a configured key's privateKeyFile (default: the first such key), issued at the sandbox's time (valid under a frozen or advanced virtual clock). The same token is handed out for a key while it is younger than 40 minutes of sandbox time (renewAfter), then a new one: APNs answers TooManyProviderTokenUpdates when a connection changes token too often and ExpiredProviderToken after an hour. With accept: application/jwt the answer is the bare token. The token is never logged.",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/MintProviderToken" } } } },
            "responses": {
              "200": { "description": "The token", "content": {
                "application/json": { "schema": { "$ref": "#/components/schemas/ProviderToken" } },
                "application/jwt": { "schema": { "type": "string" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "404": { "description": "No such key, or no key with a privateKeyFile: code key_not_found or no_signing_key", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } },
              "422": { "description": "The key cannot sign (no privateKeyFile, unreadable or invalid): code key_cannot_sign, key_unreadable, key_invalid", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        },
        "/api/v1/provider-tokens/validate": {
          "post": {
            "operationId": "validateProviderToken",
            "description": "Explains a provider token without sending a push, as Apple's token validator does: the JOSE header and claims as decoded, the key its kid names (known? its team, scope and environment), its age against apns.tokenMaxAgeSeconds, whether the ES256 signature verifies, and what APNs would answer with the cause. The provider endpoint's own checks, in its order, on the sandbox clock: the JWT's form (InvalidProviderToken), kid and iss (InvalidProviderToken), the signature (InvalidProviderToken), the age (ExpiredProviderToken; ahead by more than apns.tokenClockSkewSeconds: InvalidProviderToken), an environment-specific key (apns.environmentKeyReason), and with a topic the app's team and the key's scope (TopicDisallowed). What belongs to a connection (its team, its first key, the token-update interval) is not checked. A refused token is still a 200 answer, with valid false.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ValidateProviderToken" } } } },
            "responses": {
              "200": { "description": "The explanation", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ProviderTokenExplanation" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "422": { "description": "environment is not development or production: code invalid_environment", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        },
        "/api/v1/pushes/validate": {
          "post": {
            "operationId": "validatePush",
            "description": "The provider endpoint's verdict on a push without sending it: the same checks POST /3/device/{token} runs, in its order, minus authentication and anything that changes state (no record, event, rate counting, fault rule or auto-registration). Checks: path and device token, headers, topic (MissingTopic as on a token connection, BadTopic, BadPriority), an unknown app without apns.autoRegisterApps (TopicDisallowed), payload (PayloadEmpty, PayloadTooLarge, BadPayload), then the device (unknown-token policy, environment, DeviceTokenNotForTopic, Unregistered). A push that would be rejected is still a 200 answer with valid false.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ValidatePush" } } } },
            "responses": {
              "200": { "description": "The verdict", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/PushVerdict" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "422": { "description": "environment is not development or production: code invalid_environment", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        }
      },
      "components": {
        "schemas": {
          "ValidatePush": {
            "type": "object",
            "additionalProperties": false,
            "required": ["deviceToken", "payload"],
            "properties": {
              "deviceToken": { "type": "string", "description": "hex, as in the path /3/device/{token}" },
              "headers": { "type": "object", "additionalProperties": { "type": "string" }, "description": "apns-topic, apns-push-type, apns-priority, ... as they would be sent" },
              "payload": { "type": "string", "description": "the raw payload text exactly as it would be sent" },
              "environment": { "type": "string", "enum": ["development", "production"], "description": "default: apns.defaultEnvironment" }
            }
          },
          "ValidateProviderToken": {
            "type": "object",
            "additionalProperties": false,
            "required": ["token"],
            "properties": {
              "token": { "type": "string", "description": "the JWT, or a whole authorization value (bearer <JWT>)" },
              "topic": { "type": "string", "description": "an apns-topic: also check the app's team and the key's scope" },
              "environment": { "type": "string", "enum": ["development", "production"], "description": "default: apns.defaultEnvironment" }
            }
          },
          "ProviderTokenExplanation": {
            "type": "object",
            "required": ["valid", "status", "reason", "cause", "header", "claims", "key", "issuedAt", "ageSeconds", "maxAgeSeconds", "allowedSkewSeconds", "signatureValid", "environment", "topic"],
            "properties": {
              "valid": { "type": "boolean", "description": "APNs would accept the token (for this environment and topic)" },
              "status": { "type": "integer", "description": "what APNs would answer: 200, 403 or 400 (TopicDisallowed)" },
              "reason": { "type": ["string", "null"], "description": "APNs' reason, null when valid" },
              "cause": { "type": ["string", "null"], "description": "why, in a sentence (APNs does not say), null when valid" },
              "header": { "description": "the JOSE header as decoded, null when it is not base64url of JSON" },
              "claims": { "description": "the claims as decoded, null when they are not base64url of JSON" },
              "key": { "oneOf": [ { "type": "null" }, { "type": "object", "required": ["keyId", "found"], "properties": {
                "keyId": { "type": "string", "description": "the kid" },
                "found": { "type": "boolean", "description": "a configured key (teams[].keys[])" },
                "teamId": { "type": "string" },
                "scope": { "type": "string", "enum": ["team", "topics"] },
                "topics": { "type": "array", "items": { "type": "string" } },
                "environment": { "type": "string", "enum": ["development", "production", "both"] } } } ],
                "description": "the key the kid names; null when no kid could be read" },
              "issuedAt": { "type": ["integer", "null"], "description": "iat in seconds, null when the token does not parse" },
              "ageSeconds": { "type": ["integer", "null"], "description": "sandbox time minus iat (negative: issued in the future); null when there is no readable iat or the difference is beyond the range of a 64-bit integer" },
              "maxAgeSeconds": { "type": "integer", "description": "apns.tokenMaxAgeSeconds" },
              "allowedSkewSeconds": { "type": "integer", "description": "apns.tokenClockSkewSeconds" },
              "signatureValid": { "type": ["boolean", "null"], "description": "whether the signature verifies with the key; null when not checked (no token or unknown key)" },
              "environment": { "type": "string", "enum": ["development", "production"] },
              "topic": { "type": ["string", "null"] }
            }
          },
          "PushVerdict": {
            "type": "object",
            "required": ["valid", "status", "reason", "message", "pushType", "priority", "payloadBytes", "maxPayloadBytes"],
            "properties": {
              "valid": { "type": "boolean" },
              "status": { "type": "integer", "description": "what APNs would answer: 200 or 4xx" },
              "reason": { "type": ["string", "null"], "description": "APNs' reason, null when valid" },
              "message": { "type": "string" },
              "pushType": { "type": "string", "description": "the effective push type (alert when apns-push-type is absent)" },
              "priority": { "type": "integer", "description": "the effective priority (background without apns-priority: 5)" },
              "payloadBytes": { "type": "integer" },
              "maxPayloadBytes": { "type": "integer" }
            }
          },
          "ProviderTokenKeys": {
            "type": "object",
            "required": ["keys"],
            "properties": {
              "keys": { "type": "array", "items": {
                "type": "object",
                "required": ["keyId", "teamId", "scope", "topics", "environment", "canSign"],
                "properties": {
                  "keyId": { "type": "string" },
                  "teamId": { "type": "string" },
                  "scope": { "type": "string", "enum": ["team", "topics"] },
                  "topics": { "type": "array", "items": { "type": "string" } },
                  "environment": { "type": "string", "enum": ["development", "production", "both"] },
                  "canSign": { "type": "boolean" }
                } } }
            }
          },
          "MintProviderToken": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "keyId": { "type": "string" },
              "teamId": { "type": "string" }
            }
          },
          "ProviderToken": {
            "type": "object",
            "required": ["token", "keyId", "teamId", "issuedAt", "expiresAt", "renewAfter"],
            "properties": {
              "token": { "type": "string" },
              "keyId": { "type": "string" },
              "teamId": { "type": "string" },
              "issuedAt": { "type": "integer", "description": "seconds since the epoch, sandbox time" },
              "expiresAt": { "type": "integer", "description": "issuedAt + 3600" },
              "renewAfter": { "type": "integer", "description": "from this second on, a new token is handed out" }
            }
          }
        }
      }
    }
    """#
}
