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

const unreadable = () => new ApiError(400, 'invalid_request', 'The form could not be read.');

/**
 * A multipart/form-data body (a form with a file input), parsed by busboy with limits: at most one file
 * of `maxFileBytes` (the rest is read and dropped, so the answer can still say "too large"), a few short
 * text fields. A body that is not multipart is 415; a broken one 400.
 *
 * Every stream busboy hands out has its errors listened to: a body that ends inside a file part makes
 * busboy destroy the file's stream with "Unexpected end of form", and an 'error' event nobody listens
 * to is an uncaught exception, which ended the process (anyone registering reaches this form). A
 * request that goes away before its body ended (the client closed the connection) is refused too,
 * rather than leaving the parser waiting for bytes that never come.
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
    // No prototype: a part named __proto__ is just a part.
    const form: MultipartForm = { fields: Object.create(null), files: Object.create(null) };
    let settled = false;
    const fail = () => {
      if (settled) return;
      settled = true;
      request.unpipe(parser);
      parser.destroy();
      reject(unreadable());
    };
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
      stream.on('error', fail);
      stream.on('end', () => {
        form.files[name] = { bytes: Buffer.concat(chunks), truncated };
      });
    });
    parser.on('error', fail);
    parser.on('close', () => {
      if (settled) return;
      settled = true;
      resolve(form);
    });
    request.on('close', () => {
      if (!request.complete) fail();
    });
    request.pipe(parser);
  });
}
