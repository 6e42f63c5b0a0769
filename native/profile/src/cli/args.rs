//! `tpw profile`'s argv: what the command table declares for it (`--json`, `--top N`, FILE|DIR), read strictly
//! as the full CLI reads it (node's `util.parseArgs`), so that anything else (--help, a flag it does not know) is
//! left to the full CLI, whose help and usage messages are the command table's.

/// What `tpw profile` argv says, parsed as node's `util.parseArgs` with `{json: boolean, top: string}`,
/// positionals allowed, strict.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProfileArgs {
    pub json: bool,
    pub top: Option<String>,
    pub positionals: Vec<String>,
}

/// argv as `tpw profile` takes it; None for anything parseArgs refuses (--help, -h, an unknown flag, --json=x,
/// --top without a value or with one that looks like an option).
pub fn parse_args(argv: &[String]) -> Option<ProfileArgs> {
    let mut a = ProfileArgs::default();
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        i += 1;
        if arg == "--" {
            a.positionals.extend(argv[i..].iter().cloned());
            break;
        }
        if arg.len() > 2 && arg.starts_with("--") {
            // `--name=value` only where an '=' follows the name's first character (`--=x` is an option named "=x").
            if let Some(p) = arg.as_bytes()[3..].iter().position(|&b| b == b'=') {
                let (name, value) = (&arg[2..3 + p], &arg[4 + p..]);
                if name != "top" {
                    return None; // unknown, or --json with a value
                }
                a.top = Some(value.to_owned());
                continue;
            }
            match &arg[2..] {
                "json" => a.json = true,
                "top" => {
                    let value = argv.get(i)?;
                    // Strict: a value given apart that starts with '-' (and is more than '-') is refused as ambiguous.
                    if value.len() > 1 && value.starts_with('-') {
                        return None;
                    }
                    a.top = Some(value.clone());
                    i += 1;
                }
                _ => return None,
            }
            continue;
        }
        if arg.len() >= 2 && arg.starts_with('-') {
            return None; // short options: none are declared
        }
        a.positionals.push(arg.clone());
    }
    Some(a)
}
