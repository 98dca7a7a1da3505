// APNs Sandbox — the OpenAPI description of `/api/v1/faults`.

extension OpenAPIDocument {
    static let faults = #"""
    {
      "paths": {
        "/api/v1/faults": {
          "get": {
            "operationId": "listFaults",
            "description": "Every fault rule in the order they are tried (the configuration's first, then the API's), with counters, and the totals of applied faults. See docs/faults.md.",
            "responses": { "200": { "description": "Rules", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/FaultList" } } } } }
          },
          "post": {
            "operationId": "createFault",
            "description": "Adds a fault rule (last, or at `position`). The first rule that matches a push (after APNs' path, header and authentication checks) and wins its probability draw is applied.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/FaultRuleInput" } } } },
            "responses": {
              "201": { "description": "Added", "headers": { "Location": { "description": "/api/v1/faults/{id}", "schema": { "type": "string" } } }, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/FaultRule" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "409": { "$ref": "#/components/responses/Problem" },
              "422": { "$ref": "#/components/responses/Problem" }
            }
          },
          "delete": {
            "operationId": "deleteAllFaults",
            "description": "Removes every rule (the configuration's too, until a reset brings them back).",
            "responses": { "200": { "description": "Removed", "content": { "application/json": { "schema": { "type": "object", "required": ["removed"], "properties": { "removed": { "type": "integer" } } } } } } }
          }
        },
        "/api/v1/faults/{id}": {
          "parameters": [ { "name": "id", "in": "path", "required": true, "schema": { "type": "string" } } ],
          "get": { "operationId": "getFault", "responses": {
            "200": { "description": "The rule", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/FaultRule" } } } },
            "404": { "$ref": "#/components/responses/Problem" } } },
          "delete": { "operationId": "deleteFault", "responses": {
            "204": { "description": "Removed" },
            "404": { "$ref": "#/components/responses/Problem" } } }
        }
      },
      "components": {
        "schemas": {
          "AppliedFault": {
            "type": "object",
            "description": "A fault rule's application to a push.",
            "required": ["ruleId", "action", "detail"],
            "properties": { "ruleId": { "type": "string" }, "name": { "type": "string" }, "action": { "type": "string" }, "detail": { "type": "string" } }
          },
          "FaultAppliedEventData": {
            "type": "object",
            "description": "fault.applied: the rule and what it did, with the push's facts (docs/faults.md).",
            "required": ["ruleId", "action", "detail", "apnsId", "deviceToken", "environment", "connectionId", "receivedAt", "outcome"],
            "properties": {
              "ruleId": { "type": "string" }, "name": { "type": "string" }, "action": { "type": "string" }, "detail": { "type": "string" },
              "apnsId": { "type": "string" }, "deviceToken": { "type": "string" }, "topic": { "type": "string" }, "pushType": { "type": "string" },
              "environment": { "type": "string", "enum": ["development", "production"] }, "connectionId": { "type": "integer" },
              "receivedAt": { "type": "integer" },
              "outcome": { "type": "string", "enum": ["rejected", "accepted", "dropped"], "description": "dropped: no answer, nothing stored" } }
          },
          "FaultMatch": {
            "type": "object", "additionalProperties": false,
            "description": "Every field given must hold; none given: every push.",
            "properties": {
              "deviceToken": { "type": "string" }, "tokenPrefix": { "type": "string" }, "topic": { "type": "string" },
              "bundleId": { "type": "string" }, "pushType": { "type": "string" }, "priority": { "type": "integer", "enum": [1, 5, 10] },
              "environment": { "type": "string", "enum": ["development", "production"] }, "teamId": { "type": "string" },
              "keyId": { "type": "string" }, "headers": { "type": "object", "additionalProperties": { "type": "string" } },
              "apnsId": { "type": "string" }, "connectionId": { "type": "integer", "minimum": 0 }
            }
          },
          "HTTP2ErrorCode": { "oneOf": [ { "type": "integer", "minimum": 0, "maximum": 4294967295 }, { "type": "string", "enum": ["NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"] } ] },
          "FaultAction": {
            "type": "object", "minProperties": 1, "maxProperties": 1,
            "description": "Exactly one kind.",
            "properties": {
              "reject": { "type": "object", "additionalProperties": false, "required": ["reason"], "properties": { "reason": { "type": "string", "description": "One of Apple's reasons (its status follows)" }, "timestamp": { "type": "integer", "description": "410 only; default now" } } },
              "goAway": { "type": "object", "additionalProperties": false, "properties": { "reason": { "type": "string", "description": "Debug data {\"reason\":…}; default Shutdown" }, "errorCode": { "$ref": "#/components/schemas/HTTP2ErrorCode" } } },
              "resetStream": { "type": "object", "additionalProperties": false, "properties": { "errorCode": { "$ref": "#/components/schemas/HTTP2ErrorCode" } } },
              "close": { "type": "object", "additionalProperties": false },
              "stall": { "type": "object", "additionalProperties": false, "properties": { "milliseconds": { "type": "integer", "minimum": 0, "maximum": 86400000 } } },
              "trickle": { "type": "object", "additionalProperties": false, "properties": { "bytesPerChunk": { "type": "integer", "minimum": 1, "maximum": 16384 }, "intervalMilliseconds": { "type": "integer", "minimum": 1, "maximum": 86400000 } } },
              "limitConcurrentStreams": { "type": "object", "additionalProperties": false, "properties": { "to": { "type": "integer", "minimum": 1, "maximum": 4294967295 }, "milliseconds": { "type": "integer", "minimum": 0, "maximum": 86400000 } } },
              "lose": { "type": "object", "additionalProperties": false },
              "deliverLate": { "type": "object", "additionalProperties": false, "required": ["milliseconds"], "properties": { "milliseconds": { "type": "integer", "minimum": 1, "maximum": 86400000 } } },
              "extensionCrash": { "type": "object", "additionalProperties": false },
              "extensionTimeout": { "type": "object", "additionalProperties": false }
            },
            "additionalProperties": false
          },
          "FaultLatency": {
            "type": "object", "additionalProperties": false,
            "description": "fixedMilliseconds; or minMilliseconds and maxMilliseconds (uniform); or meanMilliseconds and standardDeviationMilliseconds (normal, clamped at 0). Drawn from the rule's seeded generator.",
            "properties": {
              "fixedMilliseconds": { "type": "integer", "minimum": 0, "maximum": 600000 }, "minMilliseconds": { "type": "integer", "minimum": 0, "maximum": 600000 },
              "maxMilliseconds": { "type": "integer", "minimum": 0, "maximum": 600000 }, "meanMilliseconds": { "type": "integer", "minimum": 0, "maximum": 600000 },
              "standardDeviationMilliseconds": { "type": "integer", "minimum": 0, "maximum": 600000 }
            }
          },
          "FaultRuleInput": {
            "type": "object", "additionalProperties": false,
            "properties": {
              "id": { "type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$" }, "name": { "type": "string", "minLength": 1, "maxLength": 200 },
              "preset": { "type": "string", "enum": ["outage", "throttle", "flaky"], "description": "outage: 503 ServiceUnavailable for durationSeconds; throttle: 429 TooManyRequests beyond perSecond; flaky: 500 InternalServerError for percent % of pushes" },
              "match": { "$ref": "#/components/schemas/FaultMatch" }, "action": { "$ref": "#/components/schemas/FaultAction" },
              "latency": { "$ref": "#/components/schemas/FaultLatency" },
              "probability": { "type": "number", "exclusiveMinimum": 0, "maximum": 1 },
              "seed": { "type": "integer", "minimum": 0, "maximum": 9223372036854775807 },
              "count": { "type": "integer", "minimum": 1 }, "expiresAt": { "type": "string", "format": "date-time" },
              "durationSeconds": { "type": "number", "exclusiveMinimum": 0, "maximum": 31622400 },
              "abovePerSecond": { "type": "integer", "minimum": 0 }, "perSecond": { "type": "integer", "minimum": 0 },
              "percent": { "type": "number", "exclusiveMinimum": 0, "maximum": 100 }, "position": { "type": "integer", "minimum": 0 }
            }
          },
          "FaultRule": {
            "type": "object",
            "required": ["id", "probability", "seed", "order", "state", "matched", "applied", "createdAt", "source"],
            "properties": {
              "id": { "type": "string" }, "name": { "type": "string" }, "match": { "$ref": "#/components/schemas/FaultMatch" },
              "action": { "$ref": "#/components/schemas/FaultAction" }, "latency": { "$ref": "#/components/schemas/FaultLatency" },
              "probability": { "type": "number" }, "seed": { "type": "integer" }, "count": { "type": "integer" },
              "expiresAt": { "type": "string", "format": "date-time" }, "abovePerSecond": { "type": "integer" },
              "order": { "type": "integer", "description": "Its place in the order rules are tried, from 0" },
              "state": { "type": "string", "enum": ["active", "exhausted", "expired"] },
              "matched": { "type": "integer" }, "applied": { "type": "integer" }, "remaining": { "type": "integer" },
              "createdAt": { "type": "integer" }, "source": { "type": "string", "enum": ["configuration", "api"] }
            }
          },
          "FaultList": {
            "type": "object", "required": ["rules", "totals"],
            "properties": {
              "rules": { "type": "array", "items": { "$ref": "#/components/schemas/FaultRule" } },
              "totals": { "type": "object", "required": ["applied", "byAction"], "properties": { "applied": { "type": "integer" }, "byAction": { "type": "object", "additionalProperties": { "type": "integer" } } } }
            }
          }
        }
      }
    }
    """#
}
