/** notifier: multicast push jobs. POST /notifications/send-multicast comes with the notifier issue (501 now). */
import type { ServiceSchema } from "moleculer";
import { NotImplementedError } from "../shared/errors";

const NotifierServiceSchema: ServiceSchema = {
  name: "notifier",

  actions: {
    sendMulticast: {
      handler(): never {
        throw new NotImplementedError();
      },
    },
  },
};

export default NotifierServiceSchema;
