// An example extension (see extensions/README.md and src/features/scripts/extension-api.ts): a gateway
// publishes readings in batches, one JSON array per message, and each reading becomes its own
// message on a topic made from it.
//
//   options.topic   topic template, `{field}` replaced by the reading's field (default
//                   "{topic}/{id}": the input topic and the reading's id)
//   options.maxItems  readings taken from one message at most (default 100); longer arrays are
//                   refused (the message then passes or is dropped per scripts.onError)
//
// A payload that is not a JSON array of objects goes on unchanged.

export class SplitJsonArray {
  init(options) {
    this.template = typeof options.topic === 'string' ? options.topic : '{topic}/{id}';
    this.maxItems = Number.isInteger(options.maxItems) && options.maxItems > 0 ? options.maxItems : 100;
    this.seen = 0;
  }

  onMessage(message) {
    let items;
    try {
      items = JSON.parse(message.payload.toString('utf8'));
    } catch {
      return undefined;
    }
    if (!Array.isArray(items) || !items.every((i) => i !== null && typeof i === 'object' && !Array.isArray(i))) return undefined;
    if (items.length > this.maxItems) throw new Error(`${items.length} readings in one message: at most ${this.maxItems}`);
    this.seen += items.length;
    return items.map((item) => ({
      topic: this.template.replace(/\{(\w+)\}/g, (_, field) => (field === 'topic' ? message.topic : String(item[field] ?? ''))),
      payload: JSON.stringify(item),
    }));
  }

  close() {
    this.seen = 0;
  }
}
