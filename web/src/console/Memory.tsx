// What an app spent on a day, per end user, as its budgets count it (GET …/budget-usage), and what the
// app remembers of an end user (memory.long_term): the working memory to edit, observations to delete.
import { useState } from "preact/hooks";
import type { AdminClient, AppConfig, EndUserMemory, Spent } from "./api";
import { count, t } from "./i18n";
import { Action, ErrorLine, Section, useLoad } from "./ui";

const today = (): string => new Date().toISOString().slice(0, 10); // the budgets' day is UTC

/** The app's daily caps (budget.app_daily_* and budget.end_user_daily_*), when it has them. */
export function dailyCaps(config: AppConfig): { app: Caps; endUser: Caps } {
  const budget = (typeof config.budget === "object" && config.budget !== null ? config.budget : {}) as Record<string, unknown>;
  const n = (v: unknown): number | null => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : null);
  return {
    app: { tokens: n(budget.app_daily_tokens), cost: n(budget.app_daily_cost) },
    endUser: { tokens: n(budget.end_user_daily_tokens), cost: n(budget.end_user_daily_cost) },
  };
}

interface Caps {
  tokens: number | null;
  cost: number | null;
}

/** Spent against a day's cap, as a bar and words ("1,234 of 100,000 tokens"); nothing without a cap. */
function Against({ spent, caps, who }: { spent: Spent; caps: Caps; who: string }) {
  const parts: [string, number, number][] = [];
  if (caps.tokens !== null) parts.push([t("unit_tokens"), spent.tokens, caps.tokens]);
  if (caps.cost !== null) parts.push(["USD", Number(spent.cost), caps.cost]);
  return (
    <>
      {parts.map(([unit, used, cap]) => (
        <span key={unit} class="against">
          <progress max={cap} value={Math.min(used, cap)} aria-label={t("spent_of_cap", { who, unit })} />{" "}
          <span class="small">
            {t("used_of_cap", { used: used.toLocaleString(), cap: cap.toLocaleString(), unit })}
          </span>
        </span>
      ))}
    </>
  );
}

export function Spending({ client, appId, config }: { client: AdminClient; appId: string; config: AppConfig }) {
  const caps = dailyCaps(config);
  const [day, setDay] = useState(today());
  const [endUser, setEndUser] = useState<string | null>(null);
  const usage = useLoad(() => client.budgetUsage(appId, day), [client, appId, day]);
  return (
    <>
      <Section
        title={t("budget_usage")}
        aside={
          <label class="check small">
            {t("day_utc")}
            <input type="date" value={day} onChange={(e) => setDay((e.currentTarget as HTMLInputElement).value || today())} />
          </label>
        }
      >
        <ErrorLine error={usage.error} />
        {usage.data && (
          <>
            {usage.data.app === null ? (
              <p class="muted">{t("nothing_counted", { day: usage.data.day })}</p>
            ) : (
              <p class="stats" aria-label={t("app_spending")}>
                <span>{count(usage.data.app.tokens, "token")}</span>
                <span>{usage.data.app.cost} USD</span>
                <span>{count(usage.data.app.runs, "run")}</span>
                <Against spent={usage.data.app} caps={caps.app} who={t("the_app")} />
              </p>
            )}
            {usage.data.end_users.length > 0 && (
              <table class="list compact" aria-label={t("per_end_user")}>
                <thead>
                  <tr><th>{t("col_end_user")}</th><th>{t("col_tokens")}</th><th>{t("col_cost")}</th><th>{t("col_runs")}</th><th>{t("col_of_cap")}</th><th><span class="visually-hidden">{t("memory")}</span></th></tr>
                </thead>
                <tbody>
                  {usage.data.end_users.map((u) => (
                    <tr key={u.end_user_id}>
                      <td><code>{u.user}</code></td><td>{u.tokens}</td><td>{u.cost}</td><td>{u.runs}</td>
                      <td><Against spent={u} caps={caps.endUser} who={u.user} /></td>
                      <td><button type="button" class="small" onClick={() => setEndUser(u.end_user_id)}>{t("memory")}</button></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Section>
      {endUser !== null && <Memory key={endUser} client={client} appId={appId} endUser={endUser} />}
    </>
  );
}

/** An end user's memory in the app: the working memory (edit, save), observations (delete one), all (delete). */
export function Memory({ client, appId, endUser, name }: { client: AdminClient; appId: string; endUser: string; name?: string }) {
  const found = useLoad(() => client.memory(appId, endUser), [client, appId, endUser]);
  const [shown, setShown] = useState<EndUserMemory | null>(null);
  const [draft, setDraft] = useState<string | null>(null);
  const [said, setSaid] = useState("");
  const memory = shown ?? found.data;
  if (found.error) return <ErrorLine error={found.error} />;
  if (!memory) return <p class="muted">{t("loading")}</p>;
  const text = draft ?? memory.working_memory;
  return (
    <Section
      title={t("remembers_of", { name: name ?? t("this_end_user") })}
      aside={
        <Action
          kind="danger small"
          confirm={t("forget_confirm")}
          action={async () => {
            await client.forgetMemory(appId, endUser);
            setShown({ ...memory, working_memory: "", observations: [] });
            setDraft(null);
            setSaid(t("forgotten"));
          }}
        >
          {t("delete_all")}
        </Action>
      }
    >
      <label>
        <span>{t("working_memory")}</span>
        <textarea rows={5} value={text} onInput={(e) => setDraft((e.currentTarget as HTMLTextAreaElement).value)} />
      </label>
      <p class="row">
        <Action
          kind="primary small"
          action={async () => {
            setShown(await client.setWorkingMemory(appId, endUser, text));
            setDraft(null);
            setSaid(t("working_memory_saved"));
          }}
        >
          {t("save_working_memory")}
        </Action>
        <span class="muted small" role="status">{said}</span>
      </p>
      <h3>{t("observations")}</h3>
      {memory.observations.length === 0 ? (
        <p class="muted">{t("none")}</p>
      ) : (
        <ul class="observations" aria-label={t("observations")}>
          {memory.observations.map((o) => (
            <li key={o.id} class="row">
              <span class="observation-text">{o.text}</span>
              <span class="muted small">{o.created_at.slice(0, 16).replace("T", " ")}</span>
              <Action
                kind="small"
                title={t("delete_observation")}
                action={async () => {
                  await client.forgetObservation(appId, endUser, o.id);
                  setShown({ ...memory, working_memory: memory.working_memory, observations: memory.observations.filter((x) => x.id !== o.id) });
                }}
              >
                {t("delete")}
              </Action>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}
