//! The principal registry: API keys, stored hashed, mapped to principals with roles and tenants.
//!
//! One JSON file (`principals.json` in a server's data directory) holds, per principal, its name,
//! tenant, roles, creation time and the SHA-256 of its key. A key is `cgk_` and 64 hex digits
//! from the operating system's random source, shown once when the principal is added. A key
//! carries 256 bits of randomness, so a plain SHA-256 is enough to store it: there is nothing
//! for a slow password hash to protect against guessing.
//!
//! Changes are safe under concurrency: [`Principals::add`] and [`Principals::remove`] take an
//! exclusive lock on a file beside the registry (`principals.json.lock`), re-read the registry
//! under it, apply the change and replace the file atomically (a temporary file, synced, renamed
//! over, the directory synced). Two administrators racing therefore never lose each other's
//! change, and a removed principal stays removed. Readers need no lock: a rename replaces the
//! whole file at once.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use ctxgraph_ontology::sha256_hex;
use serde::{Deserialize, Serialize};

use super::Principal;
use crate::error::Error;

/// Every key starts with this.
pub const KEY_PREFIX: &str = "cgk_";
/// Registry file format version.
const FORMAT: u32 = 1;

/// A principal as the registry stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrincipalEntry {
    /// Name, unique in the registry.
    pub name: String,
    /// Tenant.
    pub tenant: String,
    /// Roles, sorted.
    pub roles: Vec<String>,
    /// SHA-256 of the key, hex.
    pub key_sha256: String,
    /// When it was added (RFC 3339).
    pub created_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RegistryFile {
    version: u32,
    principals: Vec<PrincipalEntry>,
}

/// The registry, loaded from its file; changes are written back atomically.
#[derive(Debug)]
pub struct Principals {
    path: PathBuf,
    by_name: BTreeMap<String, PrincipalEntry>,
    by_hash: BTreeMap<String, String>,
}

fn access(code: &'static str, message: String) -> Error {
    Error::Access { code, message }
}

impl Principals {
    /// Load the registry at `path`; a missing file is an empty registry (created on first add).
    pub fn open(path: &Path) -> Result<Principals, Error> {
        let file: RegistryFile = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                access(
                    "access.registry_format",
                    format!("principal registry {}: {e}", path.display()),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => RegistryFile::default(),
            Err(e) => return Err(Error::Input(e)),
        };
        if file.version > FORMAT {
            return Err(access(
                "access.registry_format",
                format!(
                    "principal registry {}: version {} is newer than {FORMAT}",
                    path.display(),
                    file.version
                ),
            ));
        }
        let mut by_name = BTreeMap::new();
        let mut by_hash = BTreeMap::new();
        for entry in file.principals {
            by_hash.insert(entry.key_sha256.clone(), entry.name.clone());
            by_name.insert(entry.name.clone(), entry);
        }
        Ok(Principals { path: path.to_owned(), by_name, by_hash })
    }

    /// Add a principal and return its key, which is not stored and cannot be shown again.
    /// The registry is re-read under its lock first, so a change another process made since
    /// this one was opened is kept.
    pub fn add(&mut self, name: &str, tenant: &str, roles: &[String]) -> Result<String, Error> {
        let principal = Principal::new(name, tenant, roles.iter().cloned())?;
        self.update(|reg| reg.insert(principal))
    }

    fn insert(&mut self, principal: Principal) -> Result<String, Error> {
        let name = principal.name.as_str();
        if self.by_name.contains_key(name) {
            return Err(access(
                "access.duplicate_principal",
                format!("principal {name:?} already exists; remove it first to re-key it"),
            ));
        }
        let key = new_key()?;
        let hash = sha256_hex(key.as_bytes());
        let entry = PrincipalEntry {
            name: principal.name.clone(),
            tenant: principal.tenant.clone(),
            roles: principal.roles.iter().cloned().collect(),
            key_sha256: hash.clone(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        self.by_hash.insert(hash, entry.name.clone());
        self.by_name.insert(entry.name.clone(), entry);
        Ok(key)
    }

    /// Remove a principal; `false` when there was none of that name. Like [`Principals::add`],
    /// under the registry's lock on its latest content.
    pub fn remove(&mut self, name: &str) -> Result<bool, Error> {
        self.update(|reg| {
            Ok(match reg.by_name.remove(name) {
                Some(entry) => {
                    reg.by_hash.remove(&entry.key_sha256);
                    true
                }
                None => false,
            })
        })
    }

    /// Change the registry under its exclusive lock: re-read the file, apply `change`, and write
    /// it back when the change succeeded. The lock is released when this returns.
    fn update<T>(
        &mut self,
        change: impl FnOnce(&mut Principals) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let _lock = lock_registry(&self.path)?;
        *self = Principals::open(&self.path)?;
        let out = change(self)?;
        self.save()?;
        Ok(out)
    }

    /// The principal holding `key`.
    pub fn authenticate(&self, key: &str) -> Result<Principal, Error> {
        let unknown = || {
            access(
                "access.unknown_key",
                "the API key is not known (keys start with cgk_; ask an admin for one)".into(),
            )
        };
        if !key.starts_with(KEY_PREFIX) {
            return Err(unknown());
        }
        let name = self.by_hash.get(&sha256_hex(key.as_bytes())).ok_or_else(unknown)?;
        self.get(name)
    }

    /// The principal called `name`.
    pub fn get(&self, name: &str) -> Result<Principal, Error> {
        let entry = self.by_name.get(name).ok_or_else(|| {
            access(
                "access.unknown_principal",
                format!("no principal {name:?} in {}", self.path.display()),
            )
        })?;
        Principal::new(&entry.name, &entry.tenant, entry.roles.iter().cloned())
    }

    /// Every principal, by name.
    pub fn list(&self) -> impl Iterator<Item = &PrincipalEntry> {
        self.by_name.values()
    }

    /// Where the registry lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write to a temporary file beside the registry, sync it, then rename it over and sync the
    /// directory: a crash leaves the old or the new registry, never half of one, and a change
    /// reported done survives a power cut. Readable by the owner only. Called under the lock,
    /// so one temporary name is enough.
    fn save(&self) -> Result<(), Error> {
        let file =
            RegistryFile { version: FORMAT, principals: self.by_name.values().cloned().collect() };
        let text = serde_json::to_vec_pretty(&file)
            .map_err(|e| access("access.registry_format", e.to_string()))?;
        let tmp = self.path.with_extension("json.tmp");
        let mut out = private_file(&tmp, true)?;
        out.write_all(&text)?;
        out.sync_all()?;
        drop(out);
        std::fs::rename(&tmp, &self.path)?;
        #[cfg(unix)]
        File::open(registry_dir(&self.path))?.sync_all()?;
        Ok(())
    }
}

/// The registry's directory (`.` for a bare file name).
fn registry_dir(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Open `path` for writing, created readable and writable by the owner only (Unix mode 0600);
/// `truncate` empties it.
fn private_file(path: &Path, truncate: bool) -> Result<File, Error> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(truncate);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    Ok(options.open(path)?)
}

/// Take the registry's exclusive lock (`<registry>.lock`, created beside it with its
/// directory), waiting for another holder to finish. Released when the file is dropped.
fn lock_registry(path: &Path) -> Result<File, Error> {
    std::fs::create_dir_all(registry_dir(path))?;
    let file = private_file(&path.with_extension("json.lock"), false)?;
    file.lock().map_err(|e| {
        Error::Input(std::io::Error::new(
            e.kind(),
            format!("locking the principal registry {}: {e}", path.display()),
        ))
    })?;
    Ok(file)
}

/// A new API key: [`KEY_PREFIX`] and 32 bytes from the operating system's random source, in
/// hex (also the key of a session `ctxgraph ui` opens for its page).
pub fn new_key() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Input(std::io::Error::other(format!("random source: {e}"))))?;
    let mut key = String::from(KEY_PREFIX);
    for b in bytes {
        key.push_str(&format!("{b:02x}"));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_authenticate_and_are_stored_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("principals.json");
        let mut reg = Principals::open(&path).unwrap();
        let key = reg.add("ops1", "acme", &["writer".into()]).unwrap();
        assert!(key.starts_with(KEY_PREFIX) && key.len() == KEY_PREFIX.len() + 64);
        let stored = std::fs::read_to_string(&path).unwrap();
        assert!(!stored.contains(&key[KEY_PREFIX.len()..]), "the key itself is not stored");
        let reg = Principals::open(&path).unwrap();
        let p = reg.authenticate(&key).unwrap();
        assert_eq!((p.name(), p.tenant()), ("ops1", "acme"));
        assert!(p.may_write());
        let wrong = format!("{key}0");
        assert_eq!(reg.authenticate(&wrong).unwrap_err().code(), "access.unknown_key");
        assert_eq!(reg.authenticate("").unwrap_err().code(), "access.unknown_key");
    }

    #[test]
    fn duplicates_and_bad_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut reg = Principals::open(&dir.path().join("p.json")).unwrap();
        reg.add("a", "t", &[]).unwrap();
        assert_eq!(reg.add("a", "t", &[]).unwrap_err().code(), "access.duplicate_principal");
        assert_eq!(reg.add("b", "../t", &[]).unwrap_err().code(), "access.name_format");
        assert!(reg.remove("a").unwrap());
        assert!(!reg.remove("a").unwrap());
    }

    /// Many registries opened at once (as separate `principal add|remove` processes would be)
    /// change the file concurrently: every add is kept and every removed principal stays gone.
    #[test]
    fn racing_adds_and_removes_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("principals.json");
        let mut reg = Principals::open(&path).unwrap();
        for i in 0..16 {
            reg.add(&format!("old{i}"), "t", &["admin".into()]).unwrap();
        }
        // Every thread opens the registry before any of them changes it: without the lock and
        // the re-read, each would write back its own stale copy.
        let barrier = std::sync::Barrier::new(32);
        let keys: Vec<(String, String)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..32)
                .map(|i| {
                    let (path, barrier) = (&path, &barrier);
                    s.spawn(move || {
                        let mut reg = Principals::open(path).unwrap();
                        barrier.wait();
                        if i % 2 == 0 {
                            assert!(reg.remove(&format!("old{}", i / 2)).unwrap());
                            None
                        } else {
                            let name = format!("new{i}");
                            Some((reg.add(&name, "t", &[]).unwrap(), name))
                        }
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().unwrap()).collect()
        });
        let reg = Principals::open(&path).unwrap();
        let names: Vec<&str> = reg.list().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 16, "{names:?}");
        assert!(
            names.iter().all(|n| n.starts_with("new")),
            "a removed principal came back: {names:?}"
        );
        for (key, name) in &keys {
            assert_eq!(reg.authenticate(key).unwrap().name(), name);
        }
        assert!(!dir.path().join("principals.json.tmp").exists());
    }

    #[cfg(unix)]
    #[test]
    fn the_registry_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("principals.json");
        Principals::open(&path).unwrap().add("a", "t", &[]).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
