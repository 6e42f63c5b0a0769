import type { TaskSpec } from './task-yaml-spec';

/**
 * What a SkyPilot task expects of its hosts that a TPU VM run by tpw does not have. SkyPilot prepares every
 * cluster it provisions: it installs Miniforge when `conda` is missing, "some images (TPU VM) do not install conda
 * by default" (sky/templates/gcp-ray.yml.j2 and CONDA_INSTALLATION_COMMANDS, skypilot 0.14.1), and it logs in on GCP
 * as `gcpuser`. tpw runs the task on the VM as Google's image has it, as your own user, so a `conda activate` in
 * setup fails and `/home/gcpuser/...` does not exist. Warnings, not refusals: a setup may install conda itself.
 * Shared by `tpw launch` (its plan and dry run) and the language server.
 */

export interface TaskVmWarning {
  /** `setup`, `run` or `envs.NAME`. */
  field: string;
  message: string;
}

/** A `conda` command as the first word of a shell command (after `;`, `&&`, `|`, `(`, `then`, `do`, ...). */
const CONDA = /(?:^|[;&|(`]|\b(?:then|do|else)\b)\s*(conda\s+(?:activate|create|install|run|env|init|deactivate|update)\b[^\n;&|]*)/m;
const GCPUSER = /\/home\/gcpuser\b[^\s'"]*/;

export function tpuVmWarnings(task: Pick<TaskSpec, 'setup' | 'run' | 'envs'>): TaskVmWarning[] {
  const out: TaskVmWarning[] = [];
  const scripts: [string, string | undefined][] = [
    ['setup', task.setup],
    ['run', task.run],
  ];
  // One warning per kind: a script that installs conda itself before using it is not flagged.
  const installsConda = scripts.some(([, s]) => s !== undefined && /miniconda|miniforge|anaconda/i.test(s));
  let condaWarned = false;
  for (const [field, script] of scripts) {
    if (script === undefined) continue;
    const conda = CONDA.exec(script);
    if (conda && !installsConda && !condaWarned) {
      condaWarned = true;
      out.push({
        field,
        message: `runs \`${conda[1].trim()}\`, but a TPU VM has no conda: SkyPilot installs Miniforge on the clusters it makes, tpw runs on the VM as Google's image has it. Install conda in setup first, or use \`python3 -m venv\`.`,
      });
    }
    const home = GCPUSER.exec(script);
    if (home) out.push({ field, message: homeMessage(home[0]) });
  }
  for (const [name, value] of Object.entries(task.envs ?? {})) {
    const home = value === null ? null : GCPUSER.exec(value);
    if (home) out.push({ field: `envs.${name}`, message: homeMessage(home[0]) });
  }
  return out;
}

function homeMessage(path: string): string {
  return `refers to ${path}, the home of SkyPilot's GCP user (gcpuser); tpw runs as your own user on the VM, so it does not exist there. Write ~/… or $HOME/… (the workdir is ~/sky_workdir).`;
}
