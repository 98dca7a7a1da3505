// Benchmark helper, not a test: how fast SQLite alone writes what the sandbox writes per push.
//
//   store-ceiling SOURCE TARGET SYNC PER_TX
//
// SOURCE is a sandbox.sqlite after a push benchmark. Into TARGET (a new file, or ":memory:") it copies
// SOURCE's schema (tables and indexes as the sandbox created them), sets the writer's pragmas (WAL,
// synchronous = SYNC: full, normal or off; the same page cache), then replays every push in SOURCE:
// its device row first when the push is the first to its device (auto-registration writes it), its notification
// row (the writer's INSERT … ON CONFLICT statement, every column) and the events that followed it,
// in transactions of PER_TX pushes, with prepared statements and nothing else: no HTTP, no parsing,
// no delivery, no Swift. Prints "pushes rows seconds pushes_per_second". A server that stores every
// push as the sandbox does cannot accept pushes faster than this. (It replays the rows SOURCE holds
// now: records pruned by retention are not replayed, so run it on a store that kept every push.)
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void fail(sqlite3 *db, const char *what) {
    fprintf(stderr, "store-ceiling: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
    exit(1);
}

static void *allocate(void *old, size_t size) {
    void *memory = realloc(old, size ? size : 1);
    if (!memory) {
        fprintf(stderr, "store-ceiling: out of memory\n");
        exit(1);
    }
    return memory;
}

static void exec(sqlite3 *db, const char *sql) {
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) fail(db, sql);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, NULL) != SQLITE_OK) fail(db, sql);
    return statement;
}

/// One row of SOURCE, every column copied (text and blobs owned here).
typedef struct {
    int columns;
    int types[12];
    sqlite3_int64 integers[12];
    void *bytes[12];
    int lengths[12];
} Row;

static Row *load(sqlite3 *db, const char *sql, int columns, size_t *count) {
    sqlite3_stmt *statement = prepare(db, sql);
    size_t capacity = 1024, n = 0;
    Row *rows = allocate(NULL, capacity * sizeof(Row));
    while (sqlite3_step(statement) == SQLITE_ROW) {
        if (n == capacity) rows = allocate(rows, (capacity *= 2) * sizeof(Row));
        Row *row = &rows[n++];
        row->columns = columns;
        for (int i = 0; i < columns; i++) {
            row->types[i] = sqlite3_column_type(statement, i);
            row->integers[i] = sqlite3_column_int64(statement, i);
            row->bytes[i] = NULL;
            row->lengths[i] = 0;
            if (row->types[i] == SQLITE_TEXT || row->types[i] == SQLITE_BLOB) {
                const void *data = row->types[i] == SQLITE_TEXT ? (const void *)sqlite3_column_text(statement, i)
                                                                : sqlite3_column_blob(statement, i);
                row->lengths[i] = sqlite3_column_bytes(statement, i);
                row->bytes[i] = allocate(NULL, (size_t)row->lengths[i] + 1);
                if (row->lengths[i] > 0) memcpy(row->bytes[i], data, row->lengths[i]);
            }
        }
    }
    sqlite3_finalize(statement);
    *count = n;
    return rows;
}

static void bind_row(sqlite3 *db, sqlite3_stmt *statement, const Row *row) {
    for (int i = 0; i < row->columns; i++) {
        int rc;
        switch (row->types[i]) {
        case SQLITE_INTEGER: rc = sqlite3_bind_int64(statement, i + 1, row->integers[i]); break;
        case SQLITE_TEXT: rc = sqlite3_bind_text(statement, i + 1, row->bytes[i], row->lengths[i], SQLITE_STATIC); break;
        case SQLITE_BLOB: rc = sqlite3_bind_blob(statement, i + 1, row->bytes[i], row->lengths[i], SQLITE_STATIC); break;
        default: rc = sqlite3_bind_null(statement, i + 1); break;
        }
        if (rc != SQLITE_OK) fail(db, "bind");
    }
    if (sqlite3_step(statement) != SQLITE_DONE) fail(db, "step");
    sqlite3_reset(statement);
}

/// Orders device rows by token (column 0) for bsearch.
static int compare_tokens(const void *a, const void *b) {
    const Row *x = a, *y = b;
    int shorter = x->lengths[0] < y->lengths[0] ? x->lengths[0] : y->lengths[0];
    int order = memcmp(x->bytes[0], y->bytes[0], (size_t)shorter);
    return order ? order : x->lengths[0] - y->lengths[0];
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: store-ceiling SOURCE TARGET full|normal|off PUSHES_PER_TRANSACTION\n");
        return 2;
    }
    const char *synchronous = argv[3];
    long perTransaction = atol(argv[4]);
    if (perTransaction < 1) perTransaction = 1;

    sqlite3 *source = NULL, *target = NULL;
    if (sqlite3_open_v2(argv[1], &source, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) fail(source, argv[1]);
    size_t pushCount = 0, eventCount = 0;
    Row *pushes = load(source,
        "SELECT apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record, "
        "push_type, outcome, search_text FROM notifications ORDER BY seq", 11, &pushCount);
    size_t deviceCount = 0;
    Row *devices = load(source, "SELECT token, record FROM devices", 2, &deviceCount);
    qsort(devices, deviceCount, sizeof(Row), compare_tokens);
    char *deviceWritten = calloc(deviceCount ? deviceCount : 1, 1);
    Row *events = load(source, "SELECT type, time, device_token, topic, data FROM events ORDER BY id", 5, &eventCount);

    if (strcmp(argv[2], ":memory:") != 0) {
        // A fresh file every time: the schema is created, not reused.
        const char *suffixes[] = {"", "-wal", "-shm"};
        for (int i = 0; i < 3; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s%s", argv[2], suffixes[i]);
            remove(path);
        }
    }
    if (sqlite3_open(argv[2], &target) != SQLITE_OK) fail(target, argv[2]);
    exec(target, "PRAGMA journal_mode = WAL");
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA synchronous = %s", synchronous);
    exec(target, pragma);
    exec(target, "PRAGMA foreign_keys = ON");
    exec(target, "PRAGMA cache_size = -16384");
    sqlite3_stmt *schema = prepare(source,
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid");
    exec(target, "BEGIN");
    while (sqlite3_step(schema) == SQLITE_ROW) exec(target, (const char *)sqlite3_column_text(schema, 0));
    exec(target, "COMMIT");
    sqlite3_finalize(schema);

    // The sandbox writer's statements (Sources/Store/SQLite/StoreWriter.swift).
    sqlite3_stmt *insertPush = prepare(target,
        "INSERT INTO notifications(apns_id, device_token, topic, bundle_id, status, received_at, updated_at, record, "
        "push_type, outcome, search_text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(apns_id, device_token) DO UPDATE SET "
        "status = excluded.status, updated_at = excluded.updated_at, record = excluded.record, "
        "outcome = excluded.outcome, search_text = excluded.search_text "
        "WHERE topic = excluded.topic AND bundle_id = excluded.bundle_id AND received_at = excluded.received_at");
    sqlite3_stmt *insertDevice = prepare(target,
        "INSERT INTO devices(token, record) VALUES (?, ?) ON CONFLICT(token) DO NOTHING");
    sqlite3_stmt *insertEvent = prepare(target,
        "INSERT INTO events(type, time, device_token, topic, data) VALUES (?, ?, ?, ?, ?)");

    // Events are spread evenly over the pushes, in order (a push's events follow its row).
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    size_t nextEvent = 0;
    for (size_t i = 0; i < pushCount; i++) {
        if (i % perTransaction == 0) exec(target, "BEGIN IMMEDIATE");
        Row key = {.columns = 1};
        key.bytes[0] = pushes[i].bytes[1];
        key.lengths[0] = pushes[i].lengths[1];
        const Row *device = deviceCount ? bsearch(&key, devices, deviceCount, sizeof(Row), compare_tokens) : NULL;
        if (device && !deviceWritten[device - devices]) {
            deviceWritten[device - devices] = 1;
            bind_row(target, insertDevice, device);
        }
        bind_row(target, insertPush, &pushes[i]);
        size_t eventsUpTo = pushCount ? (eventCount * (i + 1)) / pushCount : 0;
        for (; nextEvent < eventsUpTo; nextEvent++) bind_row(target, insertEvent, &events[nextEvent]);
        if ((i + 1) % perTransaction == 0 || i + 1 == pushCount) exec(target, "COMMIT");
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%zu %zu %.3f %.0f\n", pushCount, pushCount + eventCount, seconds, seconds > 0 ? pushCount / seconds : 0);
    sqlite3_finalize(insertPush);
    sqlite3_finalize(insertEvent);
    sqlite3_finalize(insertDevice);
    sqlite3_close(target);
    sqlite3_close(source);
    return 0;
}
