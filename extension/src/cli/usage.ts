export const VERSION = '0.1.0';

export const USAGE = `tpw ${VERSION} — TPU Workbench on the command line

Usage:
  tpw vm list [--zone Z] [--json]            List TPU VMs (all configured zones by default)
  tpw vm create NAME --type TYPE [--version V] [--zone Z] [--spot | --reserved]
          [--startup-script FILE] [--label K=V]... [--data-disk SOURCE[,mode=read-only]]...
          [--description D] [--queued [--tier spot|guaranteed] [--valid-until 6h|TIME]]
          [--dry-run]                        Create a TPU VM and wait until it is READY;
                                             --queued: as a queued resource (created when
                                             capacity is there); --dry-run: print the
                                             equivalent gcloud command only
  tpw vm zones [--type TYPE] [--json]        Zones of the project (that offer TYPE)
  tpw vm cost TYPE [--zone Z] [--spot | --reserved]
                                             Hourly list price (every priced region without --zone)
  tpw qr list [--zone Z] [--json]            Queued resources and their state
  tpw qr delete NAME [--zone Z] [--force]    Delete a queued resource (--force: and its VM)
  tpw vm delete NAME [--zone Z]              Delete a TPU VM
  tpw vm start|stop NAME [--zone Z]          Start or stop a TPU VM
  tpw vm add-key NAME [--zone Z]             Put TPU Workbench's ed25519 key (<TPW_HOME>/id_ed25519)
                                             into the VM's metadata ssh-keys
  tpw vm types [--zone Z]                    List accelerator types and runtime versions
  tpw run RECIPE --vm NAME [--zone Z] [--no-fail-fast] [--detach] [-- OVERRIDE...]
                                             Sync the current folder to every worker and run
                                             the recipe on all of them; Ctrl-C stops them all.
                                             --detach: return once started on every worker
  tpw runs [--json]                          Runs started from this machine, newest first
  tpw logs RUN [--follow]                    Every worker's log ([wN] prefix); --follow until it ends
  tpw stop RUN                               Stop a run on every worker (SIGINT, then SIGKILL)
  tpw resume RUN                             Recreate a preempted VM and rerun with resume=auto
  tpw emulator start|stop|status             The local Cloud TPU emulator (REST API + SSH workers)
                                             start --restore-previous | --reset-state: after an
                                             unusable state file, its previous generation or none
  tpw flags lint FILE... [--json]            Check LIBTPU_INIT_ARGS / XLA_FLAGS strings in files
                                             (exit 1 on errors; unknown flags are warnings)
  tpw flags explain NAME... [--json]         What a flag does: type, values, default, source
                                             (write -- before a name given with its dashes)

Options:
  --project P     Use Google Cloud project P (default: the local emulator, or $TPW_PROJECT)
  --zone Z        Zone (default: every zone of the backend; $TPW_ZONES, comma-separated)
  --emulator      Use the local emulator even if a project is set
  --accept-new-host-keys  Record the SSH host key of a worker seen for the first time (default:
                  refuse, printing its fingerprint); a changed key is always refused
  -h, --help      Show this help;  --version  Show the version

Environment: TPW_HOME (state dir, default ~/.tpw), TPW_PROJECT, TPW_ZONES.
Exit status: 0 ok, 1 failed (a one-line reason on stderr), 2 bad usage, 130 cancelled.`;
