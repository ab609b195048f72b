// Knowledge bases: the list and a new one; a knowledge base's documents with their indexing status
// (polled while any is waiting or being indexed), uploads with progress, and a query to try.
import { known, t } from "./i18n";
import { useEffect, useState } from "preact/hooks";
import type { AdminClient, Hit } from "./api";
import { href, when } from "./logic";
import { Action, ErrorLine, Section, message, useLoad } from "./ui";

const POLL_MS = 700;

export function KnowledgeList({ client }: { client: AdminClient }) {
  const datasets = useLoad(() => client.datasets(), [client]);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [embedding, setEmbedding] = useState("none");
  return (
    <>
      <div class="page-head">
        <h1>{t("kb_title")}</h1>
      </div>
      <Section title={t("kb_new")}>
        <form
          class="grid3"
          onSubmit={(e) => e.preventDefault()}
          aria-label={t("kb_new")}
        >
          <label>
            {t("col_name")}
            <input type="text" name="dataset-name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <label>
            {t("kb_description")}
            <input type="text" name="dataset-description" value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
          </label>
          <label>
            {t("kb_search")}
            <select name="embedding" value={embedding} onChange={(e) => setEmbedding(e.currentTarget.value)}>
              <option value="none">{t("kb_keywords")}</option>
              <option value="minilm">{t("kb_vectors")}</option>
            </select>
          </label>
          <span>
            <Action
              kind="primary"
              action={async () => {
                const made = await client.createDataset({ name: name.trim(), description, embedding });
                window.location.hash = href({ page: "dataset", id: made.id });
              }}
            >
              {t("kb_create")}
            </Action>
          </span>
        </form>
      </Section>
      <ErrorLine error={datasets.error} />
      <DatasetKey client={client} />
      {datasets.data && datasets.data.length > 0 && (
        <table class="list" aria-label={t("kb_title")}>
          <thead>
            <tr><th>{t("col_name")}</th><th>{t("kb_documents")}</th><th>{t("kb_words")}</th><th>{t("kb_search")}</th></tr>
          </thead>
          <tbody>
            {datasets.data.map((d) => (
              <tr key={d.id}>
                <td><a href={href({ page: "dataset", id: d.id })}>{d.name}</a></td>
                <td>{d.document_count}</td>
                <td>{d.word_count}</td>
                <td>{known(`sm_${d.retrieval_model_dict.search_method}`, d.retrieval_model_dict.search_method.replace(/_/g, " "))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** A dataset API key for the Knowledge API (/v1/datasets), shown once. */
function DatasetKey({ client }: { client: AdminClient }) {
  const [token, setToken] = useState<string | null>(null);
  return (
    <p class="row">
      <Action action={async () => setToken(await client.createDatasetKey())} title={t("kb_key_help")}>
        {t("kb_new_key")}
      </Action>
      {token && (
        <span>
          {t("kb_key_once")} <code class="secret">{token}</code>
        </span>
      )}
    </p>
  );
}

interface Upload {
  name: string;
  fraction: number;
  error: string | null;
}

export function DatasetPage({ client, datasetId }: { client: AdminClient; datasetId: string }) {
  const dataset = useLoad(() => client.dataset(datasetId), [client, datasetId]);
  const documents = useLoad(() => client.documents(datasetId), [client, datasetId]);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const busy = (documents.data ?? []).some((d) => d.indexing_status === "waiting" || d.indexing_status === "indexing");

  useEffect(() => {
    if (!busy) return;
    const timer = setTimeout(documents.reload, POLL_MS); // indexing runs after the upload's answer
    return () => clearTimeout(timer);
  }, [busy, documents.data]);

  const upload = async (files: FileList | null) => {
    for (const file of Array.from(files ?? [])) {
      const entry: Upload = { name: file.name, fraction: 0, error: null };
      setUploads((u) => [...u.filter((x) => x.name !== file.name), entry]);
      const update = (changes: Partial<Upload>) =>
        setUploads((u) => u.map((x) => (x.name === file.name ? { ...x, ...changes } : x)));
      try {
        await client.upload(datasetId, file, (fraction) => update({ fraction }));
        update({ fraction: 1 });
        documents.reload();
      } catch (e) {
        update({ error: message(e) });
      }
    }
  };

  if (dataset.error) return <ErrorLine error={dataset.error} />;
  if (!dataset.data) return <p class="muted">{t("loading")}</p>;
  return (
    <>
      <div class="page-head">
        <div>
          <h1>{dataset.data.name}</h1>
          <p class="muted">{dataset.data.description || t("no_description")} · <code>{dataset.data.id}</code></p>
        </div>
        <Action
          kind="danger"
          confirm={t("kb_delete_confirm", { name: dataset.data.name })}
          action={async () => {
            await client.deleteDataset(datasetId);
            window.location.hash = href({ page: "knowledge" });
          }}
        >
          {t("delete")}
        </Action>
      </div>
      <Section title={t("kb_documents")}>
        <label class="upload">
          {t("kb_upload")}
          <input type="file" name="documents" multiple onChange={(e) => upload(e.currentTarget.files)} />
        </label>
        {uploads.map((u) => (
          <div key={u.name} class="upload-row" aria-label={t("upload_of", { name: u.name })}>
            <span>{u.name}</span>
            <progress max={1} value={u.fraction} />
            <span class={u.error ? "error-text" : "muted"}>{u.error ?? (u.fraction >= 1 ? t("upload_sent") : `${Math.round(u.fraction * 100)} %`)}</span>
          </div>
        ))}
        <ErrorLine error={documents.error} />
        {documents.data && documents.data.length === 0 && <p class="muted">{t("no_documents")}</p>}
        {documents.data && documents.data.length > 0 && (
          <table class="list" aria-label={t("kb_documents")}>
            <thead>
              <tr><th>{t("col_document")}</th><th>{t("col_status")}</th><th>{t("col_segments")}</th><th>{t("kb_words")}</th><th>{t("col_added")}</th><th /></tr>
            </thead>
            <tbody>
              {documents.data.map((d) => (
                <tr key={d.id}>
                  <td>{d.name}</td>
                  <td>
                    <span class={`status ${d.indexing_status}`}>{known(`ix_${d.indexing_status}`, d.indexing_status)}</span>
                    {d.error && <span class="error-text"> {d.error}</span>}
                  </td>
                  <td>{d.segment_count}</td>
                  <td>{d.word_count}</td>
                  <td class="muted">{when(d.created_at)}</td>
                  <td>
                    <Action kind="danger small" action={async () => { await client.deleteDocument(datasetId, d.id); documents.reload(); }}>
                      {t("delete")}
                    </Action>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
      <TryQuery client={client} datasetId={datasetId} />
    </>
  );
}

function TryQuery({ client, datasetId }: { client: AdminClient; datasetId: string }) {
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <Section title={t("try_query")}>
      <form
        class="with-button"
        onSubmit={async (e) => {
          e.preventDefault();
          setError(null);
          try {
            setHits(await client.query(datasetId, query, 5));
          } catch (err) {
            setError(message(err));
          }
        }}
      >
        <input type="text" name="query" placeholder={t("query_placeholder")} aria-label={t("try_query")} value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <button type="submit" disabled={!query.trim()}>{t("kb_search")}</button>
      </form>
      <ErrorLine error={error} />
      {hits && hits.length === 0 && <p class="muted">{t("nothing_found")}</p>}
      {hits && hits.length > 0 && (
        <ol class="hits" aria-label={t("hits")}>
          {hits.map((h) => (
            <li key={h.segment.id}>
              <p class="muted small">
                {h.segment.document.name} § {h.segment.position} · {t("score", { n: h.score.toFixed(3) })}
              </p>
              <p class="hit-text">{h.segment.content}</p>
              {h.segment.answer && <p class="hit-text"><strong>{t("hit_answer")}</strong> {h.segment.answer}</p>}
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}
