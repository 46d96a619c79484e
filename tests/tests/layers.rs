//! The core's shape, as a newcomer reads it: every module imports only from its own layer or
//! the layers below (as the crate docs of `core/src/lib.rs` list them), and no two modules
//! import each other, directly or around a circle. Imports are the `crate::` paths of each
//! file (a module is a file; a path names the deepest module that exists).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of `core/src` by its path (`endpoints::token`), with its source.
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                let mut inner = prefix.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut parts = prefix.to_vec();
                if name != "mod" && name != "lib" {
                    parts.push(name);
                }
                out.insert(parts.join("::"), std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src"),
        &[],
        &mut out,
    );
    out
}

/// The modules `source` imports: each `crate::a::b` path (and each item of a `use crate::{…}`
/// group) resolved to the deepest module that exists; comments are not code.
fn imports(source: &str, modules: &BTreeMap<String, String>) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            paths.extend(inner.split(',').map(|item| item.trim().to_owned()));
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            paths.push(rest[..end].trim_end_matches(':').to_owned());
        }
    }
    paths
        .iter()
        .filter_map(|path| {
            let segments: Vec<&str> = path.split("::").collect();
            (1..=segments.len())
                .rev()
                .map(|n| segments[..n].join("::"))
                .find(|m| modules.contains_key(m))
                .or_else(|| Some(String::new()))
        })
        .collect()
}

/// The layers the crate docs list, bottom first: lines `//! N. `a`, `b` — …`.
fn layers() -> Vec<Vec<String>> {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src/lib.rs"))
            .unwrap();
    let in_section = lib
        .split("//! ## Layers")
        .nth(1)
        .expect("a Layers section in lib.rs");
    let section = in_section.split("//! ## ").next().unwrap();
    section
        .lines()
        .filter_map(|line| {
            let item = line.strip_prefix("//! ")?;
            let (number, rest) = item.split_once(". ")?;
            number.parse::<u32>().ok()?;
            let names = rest.split(" — ").next()?;
            Some(
                names
                    .split(',')
                    .map(|n| n.trim().trim_matches('`').to_owned())
                    .collect(),
            )
        })
        .collect()
}

/// The layer of `module`: that of the longest listed name it is or lies under.
fn layer_of(module: &str, layers: &[Vec<String>]) -> Option<usize> {
    layers
        .iter()
        .enumerate()
        .flat_map(|(at, names)| names.iter().map(move |n| (at, n)))
        .filter(|(_, name)| module == name.as_str() || module.starts_with(&format!("{name}::")))
        .max_by_key(|(_, name)| name.len())
        .map(|(at, _)| at)
}

#[test]
fn every_import_points_down_the_layers_and_none_runs_in_a_circle() {
    let modules = modules();
    let layers = layers();
    assert!(layers.len() >= 5, "the layers of lib.rs: {layers:?}");
    let mut graph: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut upward = Vec::new();
    for (module, source) in &modules {
        if module.is_empty() {
            continue; // lib.rs declares every module
        }
        let layer = layer_of(module, &layers)
            .unwrap_or_else(|| panic!("{module} is in no layer of lib.rs"));
        for target in imports(source, &modules) {
            // The crate root re-exports items from anywhere: naming it hides where they live.
            assert!(
                !target.is_empty(),
                "{module} imports through the crate root: name the module"
            );
            // A child naming its own parent (its shared helpers) is part of one family.
            if target == *module || module.starts_with(&format!("{target}::")) {
                continue;
            }
            let below =
                layer_of(&target, &layers).unwrap_or_else(|| panic!("{target} is in no layer"));
            if below > layer {
                upward.push(format!(
                    "{module} (layer {}) -> {target} (layer {})",
                    layer + 1,
                    below + 1
                ));
            }
            graph.entry(module).or_default().insert(target);
        }
    }
    assert!(
        upward.is_empty(),
        "imports that climb:\n{}",
        upward.join("\n")
    );

    // No circle: a depth-first walk never meets a module still on its path.
    fn visit<'g>(
        module: &'g str,
        graph: &'g BTreeMap<&str, BTreeSet<String>>,
        path: &mut Vec<&'g str>,
        done: &mut BTreeSet<&'g str>,
    ) {
        if done.contains(module) {
            return;
        }
        if let Some(at) = path.iter().position(|m| *m == module) {
            panic!("an import circle: {} -> {module}", path[at..].join(" -> "));
        }
        path.push(module);
        for next in graph.get(module).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(module);
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        visit(module, &graph, &mut Vec::new(), &mut done);
    }
    println!(
        "layers: {} modules in {} layers, {} imports, none climbing, no circle",
        modules.len() - 1,
        layers.len(),
        graph.values().map(BTreeSet::len).sum::<usize>()
    );
}
