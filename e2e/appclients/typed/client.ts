// A client typed by GraphQL Code Generator's client preset from the
// published schema: the operations below are checked against it, and their
// results are typed, with Apollo Client and with urql. TestTypedClient
// generates the types (npm run typed) and type-checks this file with tsc.
import type { ApolloClient } from '@apollo/client';
import type { Client } from '@urql/core';

import { graphql } from './gql';

export const Installations = graphql(`
  query TypedInstallations {
    installations {
      id
      pluginId
      extensions { id manifestId point description }
      capabilities { id manifestId kind }
      instances { id name connections { id manifestId connected } }
    }
  }
`);

export const Notifications = graphql(`
  query TypedNotifications($first: Int, $after: String) {
    notifications(first: $first, after: $after) {
      unread
      edges { cursor node { id title actions { id actionId label } } }
      pageInfo { hasNextPage endCursor }
    }
  }
`);

export const RunAction = graphql(`
  mutation TypedRunAction($n: ID!, $a: String!) {
    runNotificationAction(notificationId: $n, actionId: $a) { type instanceId extension }
  }
`);

export const StorageChanged = graphql(`
  subscription TypedStorageChanged($i: ID!) {
    storageChanged(instanceId: $i) { instanceId storageRevision namespace key operation }
  }
`);

export const Node = graphql(`
  query TypedNode($id: ID!) {
    node(id: $id) { __typename id ... on Extension { manifestId description } }
  }
`);

export interface MainExtension {
  pluginId: string;
  id: string;
  description: string | null | undefined;
}

// mainExtensions lists each plugin's main extension with Apollo Client.
export async function mainExtensions(client: ApolloClient): Promise<MainExtension[]> {
  const { data } = await client.query({ query: Installations });
  return (data?.installations ?? []).flatMap((instl) =>
    instl.extensions
      .filter((e) => e.manifestId === 'main')
      .map((e) => ({ pluginId: instl.pluginId, id: e.id, description: e.description })));
}

// nextPage reads a page of notifications with urql: the labels of their
// actions, the unread count and where the page ends.
export async function nextPage(client: Client, after: string | null): Promise<{ labels: string[]; unread: number; next: string | null }> {
  const r = await client.query(Notifications, { first: 20, after }).toPromise();
  const page = r.data?.notifications;
  // @ts-expect-error a page is a connection, not a list
  page?.map((n: unknown) => n);
  return {
    labels: (page?.edges ?? []).flatMap((e) => e.node.actions.map((a) => `${a.actionId}: ${a.label}`)),
    unread: page?.unread ?? 0,
    next: page?.pageInfo.endCursor ?? null,
  };
}

// describe reads one object by its global id with Apollo Client.
export async function describe(client: ApolloClient, id: string): Promise<string> {
  const { data } = await client.query({ query: Node, variables: { id } });
  const n = data?.node;
  if (n?.__typename === 'Extension') {
    return `${n.manifestId}: ${n.description ?? ''}`;
  }
  return n ? `${n.__typename} ${n.id}` : 'nothing';
}

// undo takes a notification's undo action with urql.
export async function undo(client: Client, notificationId: string): Promise<string> {
  const r = await client.mutation(RunAction, { n: notificationId, a: 'undo' }).toPromise();
  return r.data?.runNotificationAction.type ?? r.error?.message ?? '';
}

// watch hears an Instance's storage changes with urql.
export function watch(client: Client, instanceId: string, heard: (revision: number, operation: string) => void): () => void {
  const { unsubscribe } = client.subscription(StorageChanged, { i: instanceId }).subscribe((r) => {
    if (r.data) heard(r.data.storageChanged.storageRevision, r.data.storageChanged.operation);
  });
  return unsubscribe;
}
