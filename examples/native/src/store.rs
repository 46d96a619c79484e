//! Records in SQLite: one table of key → (version, bytes, purge time), the layout of the
//! package's SQLite adapter (pkg/src/adapters/sqlite.js), so either host can open the other's
//! database. Conditional writes run in `BEGIN IMMEDIATE` transactions, which hold across
//! connections and across processes sharing the file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use edgegrant::{Expect, Put, RecordKey, Stored, UnixTime};
use rusqlite::{params_from_iter, Connection, ErrorCode, OptionalExtension, TransactionBehavior};

/// The table of a host outside test mode (the package adapter's default).
pub const DEFAULT_TABLE: &str = "edgegrant_store";

/// How long a writer waits for another connection's write transaction before its own
/// transaction counts as lost (the core then decides again, and answers 503 past its limit).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Idle connections kept for the next requests; more are opened under load, then closed.
const MAX_IDLE: usize = 8;

/// Why storage failed: a fault of the host, never of the client.
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError(format!("sqlite: {error}"))
    }
}

/// Connections to one database file, reused across requests.
#[derive(Debug)]
pub struct Pool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Pool {
    /// Opens the database at `path` (creating it) in WAL mode, so readers never wait for a writer.
    pub fn open(path: &Path) -> Result<Arc<Pool>, StoreError> {
        let pool = Arc::new(Pool {
            path: path.to_owned(),
            idle: Mutex::new(Vec::new()),
        });
        // The journal mode is a property of the file: set once, every connection has it.
        let mode: String = pool.with(|connection| {
            Ok::<_, StoreError>(
                connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?,
            )
        })?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError(format!(
                "{} cannot use WAL (journal_mode is {mode})",
                path.display()
            )));
        }
        Ok(pool)
    }

    fn connect(path: &Path) -> Result<Connection, StoreError> {
        let connection = Connection::open(path)?;
        connection.busy_timeout(BUSY_TIMEOUT)?;
        Ok(connection)
    }

    /// Runs `work` on a connection, idle or new, and keeps it for the next caller.
    pub fn with<T, E: From<StoreError>>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut connection = match idle {
            Some(connection) => connection,
            None => Self::connect(&self.path)?,
        };
        let result = work(&mut connection);
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(connection);
        }
        result
    }
}

/// One table of records in a pooled database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: Arc<Pool>,
    table: String,
}

impl Store {
    /// The table `table` (created if missing). Its name is checked: it goes into SQL text.
    pub fn open(pool: &Arc<Pool>, table: &str) -> Result<Store, StoreError> {
        let mut chars = table.chars();
        let valid = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(StoreError(format!("invalid table name {table:?}")));
        }
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {table} (
                key TEXT PRIMARY KEY,
                version INTEGER NOT NULL,
                bytes BLOB NOT NULL,
                purge_after INTEGER
            );
            CREATE INDEX IF NOT EXISTS {table}_purge ON {table} (purge_after)
                WHERE purge_after IS NOT NULL;"
        );
        pool.with(|connection| Ok::<_, StoreError>(connection.execute_batch(&create)?))?;
        Ok(Store {
            pool: pool.clone(),
            table: table.to_owned(),
        })
    }

    /// Runs `work` (one request's reads and writes) on a pooled connection.
    pub fn with<T, E: From<StoreError>>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        self.pool.with(work)
    }

    /// Drops the table (test mode, once a reset replaced it).
    pub fn drop_table(&self) -> Result<(), StoreError> {
        let drop = format!("DROP TABLE IF EXISTS {}", self.table);
        self.pool
            .with(|connection| Ok::<_, StoreError>(connection.execute_batch(&drop)?))
    }

    /// The records under `keys`, in one statement (one consistent snapshot); absent keys are
    /// left out.
    pub fn read(
        &self,
        connection: &Connection,
        keys: &[RecordKey],
    ) -> Result<HashMap<String, Stored>, StoreError> {
        let mut found = HashMap::with_capacity(keys.len());
        if keys.is_empty() {
            return Ok(found);
        }
        let placeholders = vec!["?"; keys.len()].join(", ");
        let mut select = connection.prepare_cached(&format!(
            "SELECT key, version, bytes FROM {} WHERE key IN ({placeholders})",
            self.table
        ))?;
        let mut rows = select.query(params_from_iter(keys.iter().map(|k| k.to_string())))?;
        while let Some(row) = rows.next()? {
            let key: String = row.get(0)?;
            let version: i64 = row.get(1)?;
            let version = u64::try_from(version)
                .map_err(|_| StoreError(format!("record {key} has version {version}")))?;
            found.insert(
                key,
                Stored {
                    version,
                    bytes: row.get(2)?,
                },
            );
        }
        Ok(found)
    }

    /// Applies every put, each at its version + 1 (or 1), only if every expectation holds;
    /// otherwise nothing. `Ok(false)`: a condition failed, or another writer held the database
    /// past the busy timeout — either way nothing applied and the request may decide again.
    pub fn apply(&self, connection: &mut Connection, puts: &[Put]) -> Result<bool, StoreError> {
        let transaction = match connection.transaction_with_behavior(TransactionBehavior::Immediate)
        {
            Ok(transaction) => transaction,
            Err(error) if is_busy(&error) => return Ok(false),
            Err(error) => return Err(error.into()),
        };
        {
            let mut version = transaction.prepare_cached(&format!(
                "SELECT version FROM {} WHERE key = ?1",
                self.table
            ))?;
            for put in puts {
                let current: Option<i64> = version
                    .query_row([put.key.to_string()], |row| row.get(0))
                    .optional()?;
                let holds = match put.expect {
                    Expect::Absent => current.is_none(),
                    Expect::Version(expected) => {
                        current.and_then(|v| u64::try_from(v).ok()) == Some(expected)
                    }
                };
                if !holds {
                    // Dropping the transaction rolls it back: nothing applied.
                    return Ok(false);
                }
            }
            let mut upsert = transaction.prepare_cached(&format!(
                "INSERT INTO {} (key, version, bytes, purge_after) VALUES (?1, 1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET version = version + 1, bytes = excluded.bytes,
                 purge_after = excluded.purge_after",
                self.table
            ))?;
            for put in puts {
                let purge_after = put.purge_after.map(sql_time);
                upsert.execute(rusqlite::params![
                    put.key.to_string(),
                    put.bytes,
                    purge_after
                ])?;
            }
        }
        match transaction.commit() {
            Ok(()) => Ok(true),
            Err(error) if is_busy(&error) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Deletes the records whose purge time is at or before `now`; returns how many.
    pub fn purge(&self, now: UnixTime) -> Result<usize, StoreError> {
        let delete = format!(
            "DELETE FROM {} WHERE purge_after IS NOT NULL AND purge_after <= ?1",
            self.table
        );
        self.pool
            .with(|connection| Ok::<_, StoreError>(connection.execute(&delete, [sql_time(now)])?))
    }
}

/// A time as SQLite stores it (a signed 64-bit integer; times past that are "never").
fn sql_time(time: UnixTime) -> i64 {
    i64::try_from(time.0).unwrap_or(i64::MAX)
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> RecordKey {
        format!("AAAAAAAAAAAAAAAA/grant:g{n}").parse().unwrap()
    }

    fn put(n: u8, expect: Expect, bytes: Vec<u8>) -> Put {
        Put {
            key: key(n),
            expect,
            bytes,
            purge_after: None,
        }
    }

    /// A pool on a new database file; the folder goes when the guard drops.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(name: &str) -> (Scratch, Arc<Pool>) {
        let dir =
            std::env::temp_dir().join(format!("edgegrant-native-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pool = Pool::open(&dir.join("store.sqlite")).unwrap();
        (Scratch(dir), pool)
    }

    fn stored(store: &Store, connection: &Connection, n: u8) -> Option<Stored> {
        store
            .read(connection, &[key(n)])
            .unwrap()
            .remove(&key(n).to_string())
    }

    #[test]
    fn writes_apply_all_or_nothing() {
        let (_scratch, pool) = scratch("all-or-nothing");
        let store = Store::open(&pool, "records").unwrap();
        store
            .with(|connection| {
                assert!(store.apply(connection, &[put(1, Expect::Absent, vec![1])])?);
                // The second put's condition fails: the first does not apply either.
                let both = [
                    put(2, Expect::Absent, vec![2]),
                    put(1, Expect::Absent, vec![3]),
                ];
                assert!(!store.apply(connection, &both)?);
                assert_eq!(stored(&store, connection, 2), None);
                let one = Stored {
                    version: 1,
                    bytes: vec![1],
                };
                assert_eq!(stored(&store, connection, 1), Some(one));
                // At the version read, the put applies and the version moves on.
                assert!(store.apply(connection, &[put(1, Expect::Version(1), vec![4])])?);
                assert!(!store.apply(connection, &[put(1, Expect::Version(1), vec![5])])?);
                let two = Stored {
                    version: 2,
                    bytes: vec![4],
                };
                assert_eq!(stored(&store, connection, 1), Some(two));
                Ok::<_, StoreError>(())
            })
            .unwrap();
    }

    /// Threads on their own connections race read-then-write increments of one counter: every
    /// write that applied had read the latest value, so none is lost.
    #[test]
    fn conditional_writes_hold_across_connections() {
        const THREADS: u64 = 4;
        const EACH: u64 = 25;
        let (_scratch, pool) = scratch("race");
        let store = Store::open(&pool, "records").unwrap();
        let lost = std::thread::scope(|scope| {
            let racers: Vec<_> = (0..THREADS)
                .map(|_| {
                    scope.spawn(|| {
                        let mut lost = 0;
                        for _ in 0..EACH {
                            loop {
                                let applied = store
                                    .with(|connection| {
                                        let (expect, count) = match stored(&store, connection, 1) {
                                            None => (Expect::Absent, 0),
                                            Some(s) => (
                                                Expect::Version(s.version),
                                                u64::from_le_bytes(s.bytes.try_into().unwrap()),
                                            ),
                                        };
                                        let next = (count + 1).to_le_bytes().to_vec();
                                        store.apply(connection, &[put(1, expect, next)])
                                    })
                                    .unwrap();
                                if applied {
                                    break;
                                }
                                lost += 1;
                            }
                        }
                        lost
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).sum::<u64>()
        });
        let last = store.with(|connection| Ok::<_, StoreError>(stored(&store, connection, 1)));
        let last = last.unwrap().unwrap();
        assert_eq!(last.version, THREADS * EACH);
        assert_eq!(last.bytes, (THREADS * EACH).to_le_bytes());
        eprintln!(
            "{} increments, {lost} writes lost a race and were retried",
            THREADS * EACH
        );
    }
}
