// APNs Sandbox — the OpenAPI description of `/api/v1/clock` (ClockRoutes).

extension OpenAPIDocument {
    static let clock: String = #"""
    {
      "paths": {
        "/api/v1/clock": {
          "get": {
            "operationId": "getClock",
            "description": "The sandbox's time. mode real: real time (always so unless clock.virtual is set in the configuration); running: real speed, offsetMilliseconds away from real time; frozen: standing still.",
            "responses": {
              "200": { "description": "The clock", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ClockState" } } } }
            }
          }
        },
        "/api/v1/clock/freeze": {
          "post": {
            "operationId": "freezeClock",
            "description": "Stops time at the current instant: nothing time-based moves (expiry, extension budgets, webhook retries, token ages) until the clock is advanced, set or resumed. Long-polls and event streams keep their real-time timeouts and heartbeats.",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/EmptyClockChange" } } } },
            "responses": {
              "200": { "description": "The new state", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ClockState" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "409": { "description": "The clock is not virtual (clock.virtual in the configuration): code clock_not_virtual", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        },
        "/api/v1/clock/advance": {
          "post": {
            "operationId": "advanceClock",
            "description": "Moves time forward (the mode stays): every timer that falls due on the way runs, in deadline order, each seeing its own deadline as the time, and the answer comes once what they set off has committed (a stored push's `expired`, a batch's delivery; for a device pushed without pause, its change's first records), a service extension still running excepted: its end follows when it answers.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/AdvanceClock" } } } },
            "responses": {
              "200": { "description": "The new state", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ClockState" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "409": { "description": "The clock is not virtual (clock.virtual in the configuration): code clock_not_virtual", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } },
              "422": { "description": "Not exactly one of milliseconds and seconds, or out of range: code invalid_clock", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        },
        "/api/v1/clock/set": {
          "post": {
            "operationId": "setClock",
            "description": "Sets the wall time (the mode stays). Forward it is an advance; backward only wall time moves back: monotonic time, and with it every timer, never goes backwards.",
            "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/SetClock" } } } },
            "responses": {
              "200": { "description": "The new state", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ClockState" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "409": { "description": "The clock is not virtual (clock.virtual in the configuration): code clock_not_virtual", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } },
              "422": { "description": "Not exactly one of at and milliseconds, not an RFC 3339 instant, or outside 1970 to 9999: code invalid_clock", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        },
        "/api/v1/clock/resume": {
          "post": {
            "operationId": "resumeClock",
            "description": "Runs at real speed again from the current (virtual) instant.",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/EmptyClockChange" } } } },
            "responses": {
              "200": { "description": "The new state", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ClockState" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "409": { "description": "The clock is not virtual (clock.virtual in the configuration): code clock_not_virtual", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        },
        "/api/v1/clock/real": {
          "post": {
            "operationId": "realClock",
            "description": "Back to real time (mode real, offset 0). From a clock behind real time this is an advance; from one ahead, wall time moves back.",
            "requestBody": { "required": false, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/EmptyClockChange" } } } },
            "responses": {
              "200": { "description": "The new state", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ClockState" } } } },
              "400": { "$ref": "#/components/responses/Problem" },
              "409": { "description": "The clock is not virtual (clock.virtual in the configuration): code clock_not_virtual", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Problem" } } } }
            }
          }
        }
      },
      "components": {
        "schemas": {
          "ClockState": {
            "type": "object",
            "additionalProperties": false,
            "required": ["now", "nowMilliseconds", "mode", "virtual", "offsetMilliseconds"],
            "properties": {
              "now": { "type": "string", "format": "date-time", "examples": ["2026-01-01T00:00:00.000Z"] },
              "nowMilliseconds": { "type": "integer", "description": "Milliseconds since the Unix epoch" },
              "mode": { "type": "string", "enum": ["real", "running", "frozen"] },
              "virtual": { "type": "boolean", "description": "clock.virtual of the configuration: whether the clock can be steered" },
              "offsetMilliseconds": { "type": "integer", "description": "The clock's time minus real time" }
            }
          },
          "EmptyClockChange": { "type": "object", "additionalProperties": false, "maxProperties": 0 },
          "AdvanceClock": {
            "type": "object",
            "additionalProperties": false,
            "description": "Exactly one of milliseconds and seconds.",
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
              "milliseconds": { "type": "integer", "minimum": 0, "maximum": 3153600000000 },
              "seconds": { "type": "number", "minimum": 0, "maximum": 3153600000 }
            }
          },
          "SetClock": {
            "type": "object",
            "additionalProperties": false,
            "description": "Exactly one of at (RFC 3339, e.g. 2026-01-01T00:00:00Z) and milliseconds since the epoch; 1970 to 9999.",
            "minProperties": 1,
            "maxProperties": 1,
            "properties": {
              "at": { "type": "string", "format": "date-time" },
              "milliseconds": { "type": "integer", "minimum": 0, "maximum": 253402300799999 }
            }
          },
          "ClockChangedEventData": {
            "type": "object",
            "description": "clock.changed: the virtual clock's new state, and its time before the change.",
            "required": ["change", "now", "nowMilliseconds", "previousMilliseconds", "mode", "offsetMilliseconds"],
            "properties": {
              "change": { "type": "string", "enum": ["frozen", "advanced", "set", "resumed", "real"] },
              "now": { "type": "string", "format": "date-time" },
              "nowMilliseconds": { "type": "integer" },
              "previousMilliseconds": { "type": "integer" },
              "byMilliseconds": { "type": "integer", "description": "advanced only" },
              "mode": { "type": "string", "enum": ["real", "running", "frozen"] },
              "offsetMilliseconds": { "type": "integer" }
            }
          }
        }
      }
    }
    """#
}
