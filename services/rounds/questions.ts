/**
 * The question catalog of rounds (themes with their category). Integer ids, as the spec's store event
 * reports `question_id`. The catalog is written at start if missing; an event's round gets a question
 * drawn at random from it (see docs/decisions/0023-store-event-form.md).
 */
import { randomInt } from "node:crypto";
import type { QuestionInfo } from "../../shared/contracts/rounds";
import type { Collection, Store } from "../../shared/storage";

interface QuestionDoc {
  _id: number;
  theme: string;
  emoji: string | null;
  category: string;
}

export const defaultQuestions: QuestionInfo[] = [
  { id: 1, theme: "Cinema", emoji: "🎬", category: "Entertainment" },
  { id: 2, theme: "Football", emoji: "⚽", category: "Sport" },
  { id: 3, theme: "World capitals", emoji: "🌍", category: "Geography" },
  { id: 4, theme: "Jazz legends", emoji: "🎷", category: "Music" },
  { id: 5, theme: "Space", emoji: "🚀", category: "Science" },
  { id: 6, theme: "Cuisine", emoji: "🍜", category: "Food" },
];

export class QuestionsRepository {
  private readonly questions: Collection<QuestionDoc>;

  constructor(store: Store) {
    this.questions = store.collection<QuestionDoc>("questions");
  }

  async ensureCatalog(): Promise<void> {
    for (const q of defaultQuestions) {
      await this.questions.updateOne(
        { _id: q.id },
        { $set: { theme: q.theme, emoji: q.emoji, category: q.category } },
        { upsert: true },
      );
    }
  }

  async all(): Promise<QuestionInfo[]> {
    const docs = await this.questions.find({}, { sort: { _id: 1 } });
    return docs.map((d) => ({ id: d._id, theme: d.theme, emoji: d.emoji, category: d.category }));
  }

  async pick(): Promise<QuestionInfo> {
    const all = await this.all();
    if (all.length === 0) throw new Error("The question catalog is empty");
    return all[randomInt(all.length)];
  }

  async byId(id: number): Promise<QuestionInfo | null> {
    return (await this.all()).find((q) => q.id === id) ?? null;
  }
}
