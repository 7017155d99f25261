import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { ApiError, unsupportedMediaType } from './api-error.js';

export interface UploadedFile {
  bytes: Buffer;
  /** More than `maxFileBytes` was sent: `bytes` holds only the first part. */
  truncated: boolean;
}

export interface MultipartForm {
  fields: Record<string, string>;
  files: Record<string, UploadedFile>;
}

/**
 * A multipart/form-data body (a form with a file input), parsed by busboy with limits: at most one file
 * of `maxFileBytes` (the rest is read and dropped, so the answer can still say "too large"), a few short
 * text fields. A body that is not multipart is 415; a broken one 400.
 */
export function readMultipartForm(
  request: IncomingMessage,
  limits: { maxFileBytes: number; maxFields?: number },
): Promise<MultipartForm> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: request.headers,
        limits: { files: 1, fileSize: limits.maxFileBytes, fields: limits.maxFields ?? 20, fieldSize: 4096 },
      });
    } catch {
      reject(unsupportedMediaType('Send the form as multipart/form-data.'));
      return;
    }
    const unreadable = () => reject(new ApiError(400, 'invalid_request', 'The form could not be read.'));
    const form: MultipartForm = { fields: {}, files: {} };
    parser.on('field', (name, value) => {
      form.fields[name] = value;
    });
    parser.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      let truncated = false;
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => {
        truncated = true;
      });
      stream.on('end', () => {
        form.files[name] = { bytes: Buffer.concat(chunks), truncated };
      });
      // A body that ends inside the file (a cut upload, or one cut on purpose) fails this stream as
      // well as the parser. Unheard, the stream's 'error' was an uncaught exception that ended the
      // process, everyone's requests with it; the form is refused like any broken one.
      stream.on('error', unreadable);
    });
    parser.on('error', unreadable);
    parser.on('close', () => resolve(form));
    request.pipe(parser);
  });
}
