import nodemailer from "nodemailer";

/** Outgoing mail (invites) over SMTP with nodemailer; GATEHOUSE_SMTP_URL turns it on. */
export interface Mailer {
  send(message: { to: string; subject: string; text: string }): Promise<void>;
  close(): void;
}

export function createMailer(smtpUrl: string, from: string): Mailer {
  // nodemailer logs nothing unless told to: the message (which holds an invite link) never reaches the log.
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    async send(message) {
      await transport.sendMail({ from, ...message });
    },
    close() {
      transport.close();
    },
  };
}
